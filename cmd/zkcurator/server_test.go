package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

// startServer runs `zkcurator server` with args and waits until it prints its export
// line; it returns the process, the connect string and the server's directory.
func startServer(t *testing.T, args ...string) (p *proc, connect, dir string) {
	t.Helper()
	p = start(t, "", append([]string{"server"}, args...)...)
	export := regexp.MustCompile(`(?m)^    export ZK_CONNECT=(\S+)$`)
	data := regexp.MustCompile(`(?m)^  data: (\S+) `)
	require.Eventually(t, func() bool {
		return export.MatchString(p.stdout.String()) || !p.running()
	}, 90*time.Second, 20*time.Millisecond, "zkcurator server printed no export line")
	if !p.running() && testing.Short() && strings.Contains(p.stderr.String(), "needs Java and ZooKeeper") {
		t.Skipf("%s (skipped under -short)", p.stderr)
	}
	require.True(t, p.running(), "zkcurator server ended: %s", p.stderr)
	out := p.stdout.String()
	return p, export.FindStringSubmatch(out)[1], data.FindStringSubmatch(out)[1]
}

// javaIn reports whether a process runs whose command line names dir (the server's
// zoo.cfg is there).
func javaIn(t *testing.T, dir string) bool {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), filepath.Join(dir, "zoo.cfg")) {
			return true
		}
	}
	return false
}

// The server answers at the connect string it prints until Ctrl-C, then stops: exit 0,
// no java process left, its temporary directory removed.
func TestServerServesUntilInterrupted(t *testing.T) {
	p, connect, dir := startServer(t, "--port", "0")
	assert.Contains(t, p.stdout.String(), "(removed when it stops)")
	require.True(t, javaIn(t, dir), "no server process runs on %s", dir)
	out := zkc(t, connect, "lock", "holders", "/nothing-here")
	assert.Contains(t, out.stderr.String(), "/nothing-here does not exist", "zkcurator cannot use the server it printed")

	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	require.Equal(t, 0, p.wait(t, 30*time.Second))
	assert.False(t, javaIn(t, dir), "a java process is left")
	assert.NoDirExists(t, dir)
	_, err := zktest.FourLetterWord(connect, "ruok", time.Second)
	assert.Error(t, err, "the server still answers")
}

// With --data, the nodes stay in the directory: a server started again on it (SIGTERM
// stopped the first) has them.
func TestServerKeepsDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "zk")
	p, connect, printed := startServer(t, "--port", "0", "--data", dir)
	assert.Equal(t, dir, printed)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := framework.Connect(ctx, connect)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/kept", []byte("v1"))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, 30*time.Second))
	assert.False(t, javaIn(t, dir), "a java process is left")

	_, port, err := net.SplitHostPort(connect)
	require.NoError(t, err)
	p, connect, _ = startServer(t, "--port", port, "--data", dir)
	out := zkc(t, connect, "get", "/kept")
	assert.Equal(t, "v1\n", out.stdout.String())
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	require.Equal(t, 0, p.wait(t, 30*time.Second))
	assert.DirExists(t, filepath.Join(dir, "data"))
}

// A port in use, or no Java, is refused before a server is started, with what to do.
func TestServerRefusesWhatItCannotServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	p := zkc(t, "", "server", "--port", port)
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "port "+port+" on 127.0.0.1 is in use")
	assert.Contains(t, p.stderr.String(), "--port")
	assert.Empty(t, p.stdout.String())

	p = startEnv(t, "", []string{"PATH=" + t.TempDir(), "JAVA_HOME=", "ZOOKEEPER_HOME="}, "server", "--port", "0")
	assert.Equal(t, 1, p.wait(t, 30*time.Second))
	assert.Contains(t, p.stderr.String(), "zkcurator server needs Java and ZooKeeper 3.8: run 'make deps-base'")
	assert.Contains(t, p.stderr.String(), "java not found")

	p = zkc(t, "", "server", "--port", "70000")
	assert.Equal(t, exitUsage, p.code)
	assert.Contains(t, p.stderr.String(), "--port must be 0-65535")
}

// A server whose zkcurator is killed (SIGKILL: no chance to stop it) goes with it.
func TestServerKilledTakesServerWithIt(t *testing.T) {
	p, _, dir := startServer(t, "--port", "0")
	require.True(t, javaIn(t, dir))
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
	require.Eventually(t, func() bool { return !javaIn(t, dir) }, 30*time.Second, 50*time.Millisecond,
		"the server outlived its zkcurator")
	require.NoError(t, os.RemoveAll(dir)) // what zkcurator had no chance to remove
}
