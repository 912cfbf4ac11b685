package curatortest_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/zktest"
)

// One ZooKeeper for the whole package (each test uses its own paths): starting a server
// per test would cost more than the tests.
var (
	srvOnce sync.Once
	srv     *zktest.Server
	srvErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if srv != nil {
		_ = srv.Close()
	}
	os.Exit(code)
}

func server(t *testing.T) string {
	t.Helper()
	srvOnce.Do(func() { srv, srvErr = zktest.StartServer() })
	if srvErr != nil {
		if errors.Is(srvErr, zktest.ErrUnavailable) && testing.Short() {
			t.Skipf("%v (skipped under -short)", srvErr)
		}
		t.Fatalf("%v", srvErr)
	}
	return srv.ConnectString()
}

// uuid is Curator's protected-name UUID: 36 characters, dashed.
const uuid = `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`

var (
	lockNode  = regexp.MustCompile(`^_c_` + uuid + `-lock-[0-9]{10}$`)
	leaseNode = regexp.MustCompile(`^_c_` + uuid + `-lease-[0-9]{10}$`)
	latchNode = regexp.MustCompile(`^_c_` + uuid + `-latch-[0-9]{10}$`)
	writeNode = regexp.MustCompile(`^_c_` + uuid + `-__WRIT__[0-9]{10}$`)
	readNode  = regexp.MustCompile(`^_c_` + uuid + `-__READ__[0-9]{10}$`)
	memberRE  = regexp.MustCompile(`^` + uuid + `$`)
)

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// do runs a command that must succeed.
func do(t *testing.T, ctx context.Context, tool *curatortest.Tool, format string, args ...any) string {
	t.Helper()
	out, err := tool.Do(ctx, format, args...)
	require.NoError(t, err)
	return out
}

// inspector is a plain ZooKeeper connection to look at the server behind the recipes' back.
func inspector(t *testing.T, connect string) *zk.Conn {
	t.Helper()
	conn, err := zktest.Dial(ctxT(t, 30*time.Second), connect, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	return conn
}

func children(t *testing.T, conn *zk.Conn, path string) []string {
	t.Helper()
	kids, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	require.NoError(t, err)
	sort.Strings(kids)
	return kids
}

func data(t *testing.T, conn *zk.Conn, path string) string {
	t.Helper()
	b, _, err := conn.Get(path)
	require.NoError(t, err)
	return string(b)
}

// childrenEventually waits until path has n children, watching it.
func childrenEventually(t *testing.T, ctx context.Context, conn *zk.Conn, path string, n int) []string {
	t.Helper()
	for {
		kids, _, ch, err := conn.ChildrenW(path)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			ok, _, ch, err = conn.ExistsW(path)
			if ok {
				continue
			}
		}
		require.NoError(t, err)
		if len(kids) == n {
			sort.Strings(kids)
			return kids
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s has children %v, want %d: %v", path, kids, n, ctx.Err())
		}
	}
}

// notDone asserts that the async command tag has not finished within d.
func notDone(t *testing.T, tool *curatortest.Tool, tag string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	ans, err := tool.WaitDone(ctx, tag)
	require.ErrorIs(t, err, context.DeadlineExceeded, "%s finished early: %q", tag, ans)
}

func TestMutexTwoSessions(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect, curatortest.WithName("A"))
	b := curatortest.Start(t, connect, curatortest.WithName("B"))
	insp := inspector(t, connect)
	const path = "/it/mutex/two-sessions"

	do(t, ctx, a, "mutex.new m %s", path)
	do(t, ctx, b, "mutex.new m %s", path)
	assert.Equal(t, "true", do(t, ctx, a, "mutex.acquire m -1"))
	assert.Equal(t, "false", do(t, ctx, b, "mutex.acquire m 300"))

	kids := children(t, insp, path)
	require.Len(t, kids, 1, "B's timed-out node must be gone")
	assert.Regexp(t, lockNode, kids[0])
	assert.Equal(t, path+"/"+kids[0], do(t, ctx, a, "mutex.node m"))
	assert.Equal(t, path+"/"+kids[0], do(t, ctx, b, "mutex.participants m"))
	assert.Equal(t, "true", do(t, ctx, a, "mutex.owned m"))
	assert.Equal(t, "false", do(t, ctx, b, "mutex.owned m"))
	t.Logf("lock node %s/%s data %q", path, kids[0], data(t, insp, path+"/"+kids[0]))

	// Re-entrant on A's handle thread: one node, two holds.
	assert.Equal(t, "true", do(t, ctx, a, "mutex.acquire m 0"))
	assert.Len(t, children(t, insp, path), 1)
	do(t, ctx, a, "mutex.release m")
	assert.Equal(t, "false", do(t, ctx, b, "mutex.acquire m 100"))
	do(t, ctx, a, "mutex.release m")
	assert.Empty(t, children(t, insp, path))

	assert.Equal(t, "true", do(t, ctx, b, "mutex.acquire m 5000"))
	assert.Equal(t, "false", do(t, ctx, a, "mutex.acquire m 200"))
	do(t, ctx, b, "mutex.release m")
	assert.Empty(t, children(t, insp, path))
}

func TestAsyncAcquireThenRelease(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect, curatortest.WithName("A"))
	b := curatortest.Start(t, connect, curatortest.WithName("B"))
	insp := inspector(t, connect)
	const path = "/it/mutex/async"

	do(t, ctx, a, "mutex.new m %s", path)
	do(t, ctx, b, "mutex.new m %s", path)
	assert.Equal(t, "true", do(t, ctx, a, "mutex.acquire m -1"))
	require.NoError(t, b.Async(ctx, "acq", "mutex.acquire m -1"))

	// B waits; its node queues behind A's; non-thread-bound commands still answer.
	kids := childrenEventually(t, ctx, insp, path, 2)
	parts := strings.Fields(do(t, ctx, b, "mutex.participants m"))
	assert.Equal(t, []string{path + "/" + sortBySeq(kids)[0], path + "/" + sortBySeq(kids)[1]}, parts)
	notDone(t, b, "acq", 200*time.Millisecond)

	do(t, ctx, a, "mutex.release m")
	ans, err := b.WaitDone(ctx, "acq")
	require.NoError(t, err)
	assert.Equal(t, "true", ans)
	// The release runs on the thread that acquired: Curator accepts it.
	do(t, ctx, b, "mutex.release m")
	assert.Empty(t, children(t, insp, path))

	// An error from an async command comes back through WaitDone.
	require.NoError(t, b.Async(ctx, "bad", "mutex.release m"))
	_, err = b.WaitDone(ctx, "bad")
	var cerr *curatortest.CommandError
	require.ErrorAs(t, err, &cerr)
	t.Logf("release without holding: %v", err)
}

// sortBySeq sorts protected node names by the 10-digit sequence at their end.
func sortBySeq(names []string) []string {
	out := append([]string(nil), names...)
	sort.Slice(out, func(i, j int) bool { return out[i][len(out[i])-10:] < out[j][len(out[j])-10:] })
	return out
}

func TestSemaphoreTwoLeases(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect, curatortest.WithName("A"))
	b := curatortest.Start(t, connect, curatortest.WithName("B"))
	insp := inspector(t, connect)
	const path = "/it/semaphore/two"

	do(t, ctx, a, "sem.new s %s 2", path)
	do(t, ctx, b, "sem.new s %s 2", path)
	assert.Equal(t, "1", do(t, ctx, a, "sem.acquire s 1 -1"))
	assert.Equal(t, "1", do(t, ctx, b, "sem.acquire s 1 5000"))
	assert.Equal(t, "0", do(t, ctx, a, "sem.acquire s 1 300"))

	leases := children(t, insp, path+"/leases")
	require.Len(t, leases, 2)
	for _, l := range leases {
		assert.Regexp(t, leaseNode, l)
		t.Logf("lease node %s/leases/%s data %q", path, l, data(t, insp, path+"/leases/"+l))
	}
	assert.Empty(t, children(t, insp, path+"/locks"), "the inner mutex is released after each acquire")
	assert.ElementsMatch(t, leases, strings.Fields(do(t, ctx, a, "sem.participants s")))
	mine := do(t, ctx, a, "sem.leases s")
	assert.Contains(t, leases, mine)
	t.Logf("sem.leases answers %q", mine)

	require.NoError(t, a.Async(ctx, "more", "sem.acquire s 1 -1"))
	notDone(t, a, "more", 200*time.Millisecond)
	do(t, ctx, b, "sem.releaseall s")
	ans, err := a.WaitDone(ctx, "more")
	require.NoError(t, err)
	assert.Equal(t, "1", ans)
	assert.Len(t, strings.Fields(do(t, ctx, a, "sem.leases s")), 2)
	do(t, ctx, a, "sem.release s")
	do(t, ctx, a, "sem.releaseall s")
	assert.Empty(t, children(t, insp, path+"/leases"))
}

func TestSemaphoreMutex(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect, curatortest.WithName("A"))
	insp := inspector(t, connect)
	const path = "/it/semmutex"

	// Two handles in one process: a semaphore mutex is not re-entrant and not per thread.
	do(t, ctx, a, "semmutex.new x %s", path)
	do(t, ctx, a, "semmutex.new y %s", path)
	assert.Equal(t, "true", do(t, ctx, a, "semmutex.acquire x -1"))
	assert.Equal(t, "false", do(t, ctx, a, "semmutex.acquire y 200"))
	leases := children(t, insp, path+"/leases")
	require.Len(t, leases, 1)
	assert.Regexp(t, leaseNode, leases[0])
	do(t, ctx, a, "semmutex.release x")
	assert.Equal(t, "true", do(t, ctx, a, "semmutex.acquire y 5000"))
	do(t, ctx, a, "semmutex.release y")
}

func TestReadWriteLockNodes(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect, curatortest.WithName("A"))
	b := curatortest.Start(t, connect, curatortest.WithName("B"))
	insp := inspector(t, connect)
	const path = "/it/rwlock"

	do(t, ctx, a, "rw.new l %s", path)
	do(t, ctx, b, "rw.new l %s", path)
	assert.Equal(t, "true", do(t, ctx, a, "rw.writeacquire l -1"))
	kids := children(t, insp, path)
	require.Len(t, kids, 1)
	assert.Regexp(t, writeNode, kids[0])
	writer := kids[0]

	assert.Equal(t, "false", do(t, ctx, b, "rw.readacquire l 300"))

	// Downgrade: A takes the read lock while holding the write lock. Curator 5.4 creates
	// an ordinary sequential __READ__ node (its own, higher sequence number).
	assert.Equal(t, "true", do(t, ctx, a, "rw.readacquire l 0"))
	kids = children(t, insp, path)
	require.Len(t, kids, 2)
	var reader string
	for _, k := range kids {
		if k != writer {
			reader = k
		}
	}
	assert.Regexp(t, readNode, reader)
	assert.Greater(t, reader[len(reader)-10:], writer[len(writer)-10:])
	t.Logf("writer %s data %q; downgraded reader %s data %q", writer, data(t, insp, path+"/"+writer),
		reader, data(t, insp, path+"/"+reader))
	assert.Equal(t, path+"/"+writer, do(t, ctx, b, "rw.writers l"), "participants are filtered by kind")
	assert.Equal(t, path+"/"+reader, do(t, ctx, b, "rw.readers l"))

	do(t, ctx, a, "rw.writerelease l")
	assert.Equal(t, "true", do(t, ctx, b, "rw.readacquire l 5000"), "readers share")
	assert.Equal(t, "false", do(t, ctx, b, "rw.writeacquire l 200"), "B's read lock cannot upgrade while A reads")
	do(t, ctx, a, "rw.readrelease l")
	do(t, ctx, b, "rw.readrelease l")
	assert.Empty(t, children(t, insp, path))
}

func TestBarrier(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect, curatortest.WithName("A"))
	b := curatortest.Start(t, connect, curatortest.WithName("B"))
	const path = "/it/barrier/one"

	do(t, ctx, a, "barrier.set %s", path)
	do(t, ctx, a, "barrier.set %s", path) // already set is fine
	assert.Equal(t, "false", do(t, ctx, b, "barrier.wait %s 200", path))
	require.NoError(t, b.Async(ctx, "w", "barrier.wait %s -1", path))
	notDone(t, b, "w", 200*time.Millisecond)
	do(t, ctx, a, "barrier.remove %s", path)
	ans, err := b.WaitDone(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, "true", ans)
	do(t, ctx, a, "barrier.remove %s", path) // already gone is fine
	assert.Equal(t, "true", do(t, ctx, b, "barrier.wait %s 0", path))
}

func TestDoubleBarrier(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect, curatortest.WithName("A"))
	b := curatortest.Start(t, connect, curatortest.WithName("B"))
	insp := inspector(t, connect)
	const path = "/it/dbarrier"

	do(t, ctx, a, "dbarrier.new d %s 2", path)
	do(t, ctx, b, "dbarrier.new d %s 2", path)
	require.NoError(t, a.Async(ctx, "in", "dbarrier.enter d -1"))
	childrenEventually(t, ctx, insp, path, 1)
	notDone(t, a, "in", 200*time.Millisecond)
	assert.Equal(t, "true", do(t, ctx, b, "dbarrier.enter d 10000"))
	ans, err := a.WaitDone(ctx, "in")
	require.NoError(t, err)
	assert.Equal(t, "true", ans)

	kids := children(t, insp, path)
	t.Logf("double barrier nodes: %v", kids)
	require.Len(t, kids, 3)
	members := 0
	for _, k := range kids {
		if k == "ready" {
			continue
		}
		assert.Regexp(t, memberRE, k)
		members++
	}
	assert.Equal(t, 2, members)

	require.NoError(t, a.Async(ctx, "out", "dbarrier.leave d -1"))
	assert.Equal(t, "true", do(t, ctx, b, "dbarrier.leave d 10000"))
	ans, err = a.WaitDone(ctx, "out")
	require.NoError(t, err)
	assert.Equal(t, "true", ans)
	assert.Empty(t, children(t, insp, path))
}

func TestLeaderLatch(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect, curatortest.WithName("A"))
	b := curatortest.Start(t, connect, curatortest.WithName("B"))
	insp := inspector(t, connect)
	const path = "/it/latch"

	do(t, ctx, a, "latch.new l %s alpha", path)
	do(t, ctx, a, "latch.start l")
	ev, err := a.WaitEvent(ctx, "leader l ")
	require.NoError(t, err)
	assert.Equal(t, "leader l true", ev)
	assert.Equal(t, "true", do(t, ctx, a, "latch.has l"))

	do(t, ctx, b, "latch.new l %s beta", path)
	do(t, ctx, b, "latch.start l")
	kids := childrenEventually(t, ctx, insp, path, 2)
	for _, k := range kids {
		assert.Regexp(t, latchNode, k)
		t.Logf("latch node %s/%s data %q", path, k, data(t, insp, path+"/"+k))
	}
	assert.Equal(t, "false", do(t, ctx, b, "latch.await l 200"))
	assert.Equal(t, "alpha", do(t, ctx, b, "latch.leader l"))
	assert.Equal(t, "alpha beta", do(t, ctx, b, "latch.participants l"))
	bPath := do(t, ctx, b, "latch.path l")
	assert.Equal(t, "beta", data(t, insp, bPath))

	do(t, ctx, a, "latch.close l")
	ev, err = b.WaitEvent(ctx, "leader l ")
	require.NoError(t, err)
	assert.Equal(t, "leader l true", ev)
	assert.Equal(t, "true", do(t, ctx, b, "latch.await l 1000"))
	do(t, ctx, b, "latch.close l")
	t.Logf("events left on A after close: %v", a.Events())
}

func TestRevocation(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect, curatortest.WithName("A"))
	b := curatortest.Start(t, connect, curatortest.WithName("B"))
	insp := inspector(t, connect)
	const path = "/it/revoke"

	do(t, ctx, a, "mutex.new m %s", path)
	do(t, ctx, a, "mutex.revocable m release")
	assert.Equal(t, "true", do(t, ctx, a, "mutex.acquire m -1"))
	node := do(t, ctx, a, "mutex.node m")

	do(t, ctx, b, "mutex.new m %s", path)
	do(t, ctx, b, "revoke %s", node)
	ev, err := a.WaitEvent(ctx, "revoke m")
	require.NoError(t, err)
	assert.Equal(t, "revoke m", ev)
	ev, err = a.WaitEvent(ctx, "revoked m")
	require.NoError(t, err)
	assert.Equal(t, "revoked m ok", ev)
	assert.Equal(t, "true", do(t, ctx, b, "mutex.acquire m 5000"))
	do(t, ctx, b, "mutex.release m")
	assert.Empty(t, children(t, insp, path))

	// Without "release" the holder only hears the request and keeps the lock.
	do(t, ctx, a, "mutex.new n %s", path+"-keep")
	do(t, ctx, a, "mutex.revocable n")
	assert.Equal(t, "true", do(t, ctx, a, "mutex.acquire n -1"))
	node = do(t, ctx, a, "mutex.node n")
	do(t, ctx, b, "revoke %s", node)
	_, err = a.WaitEvent(ctx, "revoke n")
	require.NoError(t, err)
	assert.Equal(t, "__REVOKE__", data(t, insp, node))
	assert.Equal(t, "true", do(t, ctx, a, "mutex.owned n"))
	do(t, ctx, a, "mutex.release n")
}

func TestKilledHolder(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect, curatortest.WithName("A"), curatortest.WithSessionTimeout(1500*time.Millisecond))
	b := curatortest.Start(t, connect, curatortest.WithName("B"))
	insp := inspector(t, connect)
	const path = "/it/killed"

	do(t, ctx, a, "mutex.new m %s", path)
	assert.Equal(t, "true", do(t, ctx, a, "mutex.acquire m -1"))
	a.Kill()
	_, err := a.Do(ctx, "ping")
	require.ErrorIs(t, err, curatortest.ErrExited)
	assert.Len(t, children(t, insp, path), 1, "the dead holder's node stays until its session expires")

	do(t, ctx, b, "mutex.new m %s", path)
	start := time.Now()
	assert.Equal(t, "true", do(t, ctx, b, "mutex.acquire m 20000"))
	t.Logf("B got the lock %v after A was killed", time.Since(start).Round(time.Millisecond))
	do(t, ctx, b, "mutex.release m")
	require.NoError(t, a.Close())
}

func TestCommandsAndErrors(t *testing.T) {
	t.Parallel()
	connect := server(t)
	ctx := ctxT(t, 60*time.Second)
	a := curatortest.Start(t, connect)
	require.NoError(t, curatortest.Available())

	assert.Equal(t, "pong", do(t, ctx, a, "ping"))
	assert.Equal(t, a.SessionID(), do(t, ctx, a, "session"))
	ev, err := a.WaitEvent(ctx, "state ")
	require.NoError(t, err)
	assert.Equal(t, "state CONNECTED", ev)

	var cerr *curatortest.CommandError
	_, err = a.Do(ctx, "no.such.command x")
	require.ErrorAs(t, err, &cerr)
	assert.Contains(t, cerr.Message, "unknown command")
	_, err = a.Do(ctx, "mutex.acquire nohandle 10")
	require.ErrorAs(t, err, &cerr)
	do(t, ctx, a, "mutex.new m /it/errors")
	_, err = a.Do(ctx, "mutex.new m /it/errors")
	require.ErrorAs(t, err, &cerr, "duplicate id")
	_, err = a.Do(ctx, "mutex.release m")
	require.ErrorAs(t, err, &cerr, "release without holding")
	t.Logf("release without holding: %v", err)
	_, err = a.Do(ctx, "latch.start m")
	require.ErrorAs(t, err, &cerr, "wrong kind")
	_, err = a.Do(ctx, "ping\nping")
	require.Error(t, err)

	// A cancelled command leaves the protocol in step: its late answer is dropped.
	do(t, ctx, a, "barrier.set /it/errors-barrier")
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = a.Do(short, "barrier.wait /it/errors-barrier 600")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "pong", do(t, ctx, a, "ping"))

	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
	_, err = a.Do(ctx, "ping")
	require.ErrorIs(t, err, curatortest.ErrExited)
}

// TestBench runs a short workload on Curator with StartBench, and the ways it fails: an
// unknown workload (found before a JVM starts), a path Curator refuses (the JVM's error,
// before ready), a context that ends first (the JVM is killed).
func TestBench(t *testing.T) {
	connect := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := curatortest.BenchConfig{Connect: connect, SessionTimeout: 30 * time.Second, Workload: "mutex",
		Clients: 1, PerClient: 2, OpsPerWorker: 10, Base: "/bench/mutex", WarmupOpsPerWorker: 2, WarmupBase: "/bench/warmup"}

	b, err := curatortest.StartBench(ctx, cfg)
	require.NoError(t, err)
	line, err := b.Run(ctx)
	require.NoError(t, err)
	assert.Regexp(t, `^\{"impl":"curator","workload":"mutex","clients":1,"per_client":2,"ops":20,"seconds":[0-9.]+,`+
		`"ops_per_s":[0-9.]+,"p50_us":[0-9]+,"p99_us":[0-9]+,"violations":0\}$`, line)
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close may be called again")
	for _, p := range []string{"/bench/mutex", "/bench/warmup"} {
		kids, err := zktest.Children(ctx, connect, p)
		require.NoError(t, err)
		assert.Empty(t, kids, "no lock node left under %s", p)
	}

	bad := cfg
	bad.Workload = "nosuch"
	_, err = curatortest.StartBench(ctx, bad)
	assert.ErrorIs(t, err, curatortest.ErrBenchFailed)

	bad = cfg
	bad.Base = "no-slash"
	_, err = curatortest.StartBench(ctx, bad)
	assert.ErrorIs(t, err, curatortest.ErrBenchFailed)
	assert.Contains(t, err.Error(), "Path must start with /", "the JVM's message is passed on")

	done, stop := context.WithCancel(ctx)
	stop()
	_, err = curatortest.StartBench(done, cfg)
	assert.ErrorIs(t, err, context.Canceled)
}
