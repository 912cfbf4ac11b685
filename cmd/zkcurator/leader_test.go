package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/zktest"
)

// leaderScript is a command for leader run: it logs its start (with its environment),
// logs a SIGTERM and exits 1 on it, and otherwise loops in short sleeps until stop
// exists (then exits code) or a minute has passed (exit 99).
func leaderScript(log, stop string, code int) string {
	return fmt.Sprintf(`trap 'echo terminated >> %[1]s; exit 1' TERM; `+
		`echo "started $ZK_LEADER_ID $ZK_LEADER_PATH $ZK_LEADER_TOKEN" >> %[1]s; n=0; `+
		`while [ ! -f %[2]s ]; do n=$((n+1)); [ $n -lt 1200 ] || exit 99; sleep 0.05; done; exit %[3]d`, log, stop, code)
}

// whoParticipants returns the lines of `leader who -v path`.
func whoParticipants(t *testing.T, connect, path string) []string {
	t.Helper()
	p := zkc(t, connect, "leader", "who", "-v", path)
	if p.code != 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(p.stdout.String()), "\n")
}

// Two leader run processes on one path: only the leader runs its command; a leader whose
// connection stalls has its command stopped (exit 70), and the other one then leads and
// runs its command; a leader whose zkcurator is killed hands over to the next once its
// session is gone. leader who names the leader, and -v lists everyone in line.
func TestLeaderRun(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := srv.ConnectString()
	const path = "/cli/leader"
	dir := t.TempDir()
	logA, logB, logC, stop := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c"), filepath.Join(dir, "stop")

	a := start(t, proxy.ConnectString(), "--session-timeout", "2s", "leader", "run", path, "--id", "alpha", "--grace", "5s",
		"--", "sh", "-c", leaderScript(logA, stop, 0))
	waitFile(t, logA, 20*time.Second)
	assert.Regexp(t, `^started alpha /cli/leader [0-9]+\n$`, read(t, logA))
	assert.Equal(t, "alpha", out(t, c, "leader", "who", path))

	b := start(t, c, "--session-timeout", "2s", "leader", "run", path, "--id", "beta", "--", "sh", "-c", leaderScript(logB, stop, 0))
	require.Eventually(t, func() bool { return len(whoParticipants(t, c, path)) == 2 }, 20*time.Second, 50*time.Millisecond,
		"beta did not join the election")
	lines := whoParticipants(t, c, path)
	assert.Regexp(t, `^leader   /cli/leader/_c_[0-9a-f-]{36}-lock-[0-9]{10}  alpha$`, lines[0])
	assert.Regexp(t, `^waiting  /cli/leader/_c_[0-9a-f-]{36}-lock-[0-9]{10}  beta$`, lines[1])
	_, err := os.Stat(logB)
	assert.ErrorIs(t, err, os.ErrNotExist, "beta ran its command while alpha leads")

	// Waiting in vain: --timeout exits 75, runs nothing and leaves nothing behind.
	p := zkc(t, c, "leader", "run", path, "--id", "gamma", "--timeout", "300ms", "--", "sh", "-c", "echo ran")
	assert.Equal(t, 75, p.code)
	assert.Empty(t, p.stdout.String())
	assert.Contains(t, p.stderr.String(), "timed out after 300ms waiting for leadership of /cli/leader")
	assert.Len(t, whoParticipants(t, c, path), 2)

	// alpha's connection stalls: its command is stopped, and beta leads once alpha's
	// session is gone.
	proxy.Stall()
	assert.Equal(t, 70, a.wait(t, 20*time.Second))
	assert.Contains(t, a.stderr.String(), "leadership of /cli/leader may have been lost")
	assert.True(t, strings.HasSuffix(read(t, logA), "terminated\n"), "alpha's command got SIGTERM: %q", read(t, logA))
	waitFile(t, logB, 20*time.Second)
	assert.Regexp(t, `^started beta /cli/leader [0-9]+\n$`, read(t, logB))
	proxy.Heal()
	assert.Equal(t, "beta", out(t, c, "leader", "who", path))

	// beta's zkcurator is killed: gamma leads once beta's session is gone (its command
	// died with it).
	g := start(t, c, "leader", "run", path, "--id", "gamma", "--", "sh", "-c", leaderScript(logC, stop, 3))
	require.Eventually(t, func() bool { return len(whoParticipants(t, c, path)) == 2 }, 20*time.Second, 50*time.Millisecond,
		"gamma did not join the election")
	_, err = os.Stat(logC)
	assert.ErrorIs(t, err, os.ErrNotExist, "gamma ran its command while beta leads")
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGKILL))
	b.wait(t, 20*time.Second)
	waitFile(t, logC, 20*time.Second)
	assert.Equal(t, "gamma", out(t, c, "leader", "who", path))

	// gamma's command ends: zkcurator exits with its status, and gives leadership up.
	require.NoError(t, os.WriteFile(stop, nil, 0o644))
	assert.Equal(t, 3, g.wait(t, 20*time.Second), "the command's status")
	p = zkc(t, c, "leader", "who", path)
	assert.Empty(t, p.stdout.String())
	if p.code == 0 { // the path is a container: the server deletes it soon after
		assert.Contains(t, p.stderr.String(), "nobody leads at /cli/leader")
	} else {
		assert.Equal(t, 1, p.code)
		assert.Contains(t, p.stderr.String(), "/cli/leader does not exist")
	}
}

// leader who reads a Curator LeaderLatch's election: the leader's participant id, and
// with -v everyone in line.
func TestLeaderWhoCuratorLatch(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	tool := curatortest.Start(t, c, curatortest.WithSessionTimeout(4*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path = "/cli/latch"
	for _, id := range []string{"java-1", "java-2"} {
		_, err := tool.Do(ctx, "latch.new %s %s %s", id, path, id)
		require.NoError(t, err)
		_, err = tool.Do(ctx, "latch.start %s", id)
		require.NoError(t, err)
		if id == "java-1" {
			got, err := tool.Do(ctx, "latch.await java-1 10000")
			require.NoError(t, err)
			require.Equal(t, "true", got)
		}
	}
	node, err := tool.Do(ctx, "latch.path java-1")
	require.NoError(t, err)

	assert.Equal(t, "java-1", out(t, c, "leader", "who", path))
	lines := strings.Split(out(t, c, "leader", "who", path, "-v"), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, "leader   "+node+"  java-1", lines[0])
	assert.Regexp(t, regexp.MustCompile(`^waiting  /cli/latch/_c_[0-9a-f-]{36}-latch-[0-9]{10}  java-2$`), lines[1])

	_, err = tool.Do(ctx, "latch.close java-1")
	require.NoError(t, err)
	// Curator's LeaderLatch.close deletes its node in the background: it may still be
	// there when close returns.
	assert.Eventually(t, func() bool { return out(t, c, "leader", "who", path) == "java-2" },
		20*time.Second, 50*time.Millisecond, "the next latch leads once java-1's node is gone")
}

func TestLeaderUsage(t *testing.T) {
	for _, args := range [][]string{
		{"leader"},
		{"leader", "elect", "/x"},
		{"leader", "run", "/x"},
		{"leader", "run", "x", "--", "true"},
		{"leader", "run", "/x", "--timeout", "-1s", "--", "true"},
		{"leader", "who"},
		{"leader", "who", "/x", "/y"},
	} {
		p := zkc(t, "127.0.0.1:1", args...)
		assert.Equal(t, 2, p.code, "%q: %s", args, p.stderr.String())
	}
	p := zkc(t, "127.0.0.1:1", "help", "leader", "run")
	assert.Equal(t, 0, p.code)
	assert.Contains(t, p.stdout.String(), "ZK_LEADER_TOKEN")
}

// leader run --revocable: the command gets its election node, which leader who -v lists,
// and is stopped (exit 70) when someone revokes it.
func TestLeaderRunRevocable(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	const path = "/cli/revleader"
	ready := filepath.Join(t.TempDir(), "ready")
	script := fmt.Sprintf(`echo "$ZK_LEADER_NODE" > %[1]s.tmp && mv %[1]s.tmp %[1]s; n=0; `+
		`while [ $n -lt 1200 ]; do n=$((n+1)); sleep 0.05; done; exit 99`, ready)
	p := start(t, c, "leader", "run", path, "--revocable", "--id", "rev", "--", "sh", "-c", script)
	waitFile(t, ready, 20*time.Second)
	node := strings.TrimSpace(read(t, ready))
	assert.Equal(t, "leader   "+node+"  rev", out(t, c, "leader", "who", "-v", path))

	assert.Equal(t, 0, zkc(t, c, "lock", "revoke", node, "--wait", "10s").code)
	assert.Equal(t, 70, p.wait(t, 20*time.Second))
	assert.Contains(t, p.stderr.String(), "revoked")
}

// leader who on a path whose children are not election nodes (here a semaphore's) says
// so and exits 1, rather than listing those children as participants.
func TestLeaderWhoNotAnElection(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := zktest.Dial(ctx, c, 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	for _, p := range []string{"/cli", "/cli/sem", "/cli/sem/leases", "/cli/sem/locks"} {
		_, err = conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	for _, args := range [][]string{{"leader", "who", "/cli/sem"}, {"leader", "who", "-v", "/cli/sem"}} {
		p := zkc(t, c, args...)
		assert.Equal(t, 1, p.code, "%q", args)
		assert.Empty(t, p.stdout.String(), "%q", args)
		assert.Contains(t, p.stderr.String(), "/cli/sem is not a leader election", "%q", args)
	}
}

// leader who and lock holders refuse a node that is plainly no election or lock: one
// holding data, an ephemeral node, a path whose children are plain nodes (one of them
// named locks); a node with no children and no data is one nobody is in (exit 0).
func TestLeaderWhoAndLockHoldersRefusePlainNodes(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := zktest.Dial(ctx, c, 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	for _, n := range []struct {
		path, data string
		flags      int32
	}{
		{"/cli", "", 0}, {"/cli/config", "workers=8", 0}, {"/cli/empty", "", 0}, {"/cli/eph", "", zk.FlagEphemeral},
		{"/cli/plain", "", 0}, {"/cli/plain/locks", "", 0}, {"/cli/plain/locks/lock-0000000000", "", 0},
	} {
		_, err = conn.Create(n.path, []byte(n.data), n.flags, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	for _, tc := range []struct{ path, says string }{
		{"/cli/config", "/cli/config is not %s: it is a plain node holding 9 bytes of data and no children: try 'zkcurator get /cli/config'"},
		{"/cli/eph", "/cli/eph is not %s: it is an ephemeral node"},
		{"/cli/plain", "/cli/plain is not %s: none of its 1 children is a "},
	} {
		for _, cmd := range [][]string{{"leader", "who"}, {"leader", "who", "-v"}, {"lock", "holders"}} {
			what := "a leader election"
			if cmd[0] == "lock" {
				what = "a lock"
			}
			p := zkc(t, c, append(cmd, tc.path)...)
			assert.Equal(t, 1, p.code, "%q %s", cmd, tc.path)
			assert.Empty(t, p.stdout.String(), "%q %s", cmd, tc.path)
			assert.Contains(t, p.stderr.String(), fmt.Sprintf(tc.says, what), "%q %s", cmd, tc.path)
		}
	}
	p := zkc(t, c, "leader", "who", "/cli/empty")
	assert.Equal(t, 0, p.code)
	assert.Contains(t, p.stderr.String(), "nobody leads at /cli/empty")
	p = zkc(t, c, "lock", "holders", "/cli/empty")
	assert.Equal(t, 0, p.code)
	assert.Contains(t, p.stderr.String(), "nobody holds the lock at /cli/empty")
}
