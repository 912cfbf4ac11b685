package mutex_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// iLockNode is the name of a Curator (and Go) mutex node.
var iLockNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$`)

func iRetry(t testing.TB) retry.Policy {
	t.Helper()
	p, err := retry.NewBoundedExponentialBackoff(20*time.Millisecond, 200*time.Millisecond, 10)
	require.NoError(t, err)
	return p
}

// inewClient connects a client (session 4 s) and closes it at cleanup.
func inewClient(t testing.TB, connect string) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Connect(ctx, connect,
		framework.WithSessionTimeout(4*time.Second),
		framework.WithConnectionTimeout(3*time.Second),
		framework.WithRetryPolicy(iRetry(t)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func inewMutex(t testing.TB, c *framework.Client, path string, opts ...mutex.Option) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path, opts...)
	require.NoError(t, err)
	return m
}

func ictx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// istart starts a Curator JVM on connect.
func istart(t testing.TB, connect string) *curatortest.Tool {
	t.Helper()
	return curatortest.Start(t, connect, curatortest.WithSessionTimeout(4*time.Second))
}

// ido runs a Curator command and returns its result.
func ido(t testing.TB, ctx context.Context, tool *curatortest.Tool, format string, args ...any) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := tool.Do(cctx, format, args...)
	require.NoError(t, err, format, args)
	return out
}

type iresult struct {
	l   *mutex.Lease
	err error
}

func igoAcquire(ctx context.Context, m *mutex.Mutex) <-chan iresult {
	ch := make(chan iresult, 1)
	go func() {
		l, err := m.Acquire(ctx)
		ch <- iresult{l, err}
	}()
	return ch
}

func iwaitParticipants(t testing.TB, m *mutex.Mutex, n int) []string {
	t.Helper()
	var parts []string
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p, err := m.Participants(ctx)
		if err == nil && len(p) == n {
			parts = p
			return true
		}
		return false
	}, 15*time.Second, 20*time.Millisecond, "waiting for %d participants", n)
	return parts
}

// inotYet fails the test if ch delivers within d.
func inotYet(t testing.TB, ch <-chan iresult, d time.Duration, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s returned too early: lease %v, err %v", what, r.l != nil, r.err)
	case <-time.After(d):
	}
}

func iget(t testing.TB, ch <-chan iresult, d time.Duration, what string) *mutex.Lease {
	t.Helper()
	select {
	case r := <-ch:
		require.NoError(t, r.err, what)
		return r.l
	case <-time.After(d):
		t.Fatalf("%s: no lease after %v", what, d)
		return nil
	}
}

func iassertNoChildren(t testing.TB, connect, path string, clients ...*framework.Client) {
	t.Helper()
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		require.NoError(t, c.WaitGuaranteedDeletes(ctx))
		cancel()
	}
	empty := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kids, err := zktest.Children(ctx, connect, path)
		return err == nil && len(kids) == 0
	}
	if !assert.Eventually(t, empty, 10*time.Second, 50*time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kids, err := zktest.Children(ctx, connect, path)
		require.NoError(t, err)
		require.Empty(t, kids, "children left under %s", path)
	}
}

func TestCuratorAndGoExclude(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := istart(t, srv.ConnectString())
	c := inewClient(t, srv.ConnectString())
	const path = "/interop/m"
	m := inewMutex(t, c, path)
	ctx := ictx(t, 120*time.Second)

	ido(t, ctx, tool, "mutex.new j %s", path)
	require.Equal(t, "true", ido(t, ctx, tool, "mutex.acquire j -1"))
	javaNode := ido(t, ctx, tool, "mutex.node j")
	require.True(t, strings.HasPrefix(javaNode, path+"/"), javaNode)

	l, err := m.TryAcquire(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, mutex.ErrLocked, "Go must see Curator's lock")
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	parts := iwaitParticipants(t, m, 1)
	require.Equal(t, javaNode, parts[0], "a failed TryAcquire leaves no node")

	goRes := igoAcquire(ctx, m)
	parts = iwaitParticipants(t, m, 2)
	require.Equal(t, javaNode, parts[0])
	for _, p := range parts {
		require.Regexp(t, iLockNode, framework.NodeName(p))
	}
	javaParts := strings.Fields(ido(t, ctx, tool, "mutex.participants j"))
	require.Equal(t, parts, javaParts, "Curator and Go must agree on the order")
	inotYet(t, goRes, 300*time.Millisecond, "Go Acquire while Curator holds")

	ido(t, ctx, tool, "mutex.release j")
	gl := iget(t, goRes, 10*time.Second, "Go Acquire after Curator released")
	require.Equal(t, parts[1], gl.Node())

	require.NoError(t, tool.Async(ctx, "a1", "mutex.acquire j -1"))
	parts = iwaitParticipants(t, m, 2)
	require.Equal(t, gl.Node(), parts[0])
	require.Regexp(t, iLockNode, framework.NodeName(parts[1]))
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = tool.WaitEvent(wctx, "done a1 ")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "Curator acquired while Go holds")
	require.Equal(t, "false", ido(t, ctx, tool, "mutex.owned j"))

	require.NoError(t, gl.Release(ctx))
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	got, err := tool.WaitDone(dctx, "a1")
	cancel()
	require.NoError(t, err)
	require.Equal(t, "true", got)
	require.Equal(t, parts[1], ido(t, ctx, tool, "mutex.node j"))
	ido(t, ctx, tool, "mutex.release j")

	iassertNoChildren(t, srv.ConnectString(), path, c)
}

func TestFairQueueMixed(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := istart(t, srv.ConnectString())
	c1, c2 := inewClient(t, srv.ConnectString()), inewClient(t, srv.ConnectString())
	const path = "/interop/fair"
	m1, m2 := inewMutex(t, c1, path), inewMutex(t, c2, path)
	ctx := ictx(t, 120*time.Second)

	l1, err := m1.Acquire(ctx)
	require.NoError(t, err)

	ido(t, ctx, tool, "mutex.new j %s", path)
	require.NoError(t, tool.Async(ctx, "a1", "mutex.acquire j -1"))
	iwaitParticipants(t, m1, 2)
	goRes := igoAcquire(ctx, m2)
	parts := iwaitParticipants(t, m1, 3)
	require.Equal(t, l1.Node(), parts[0])

	require.NoError(t, l1.Release(ctx))
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	got, err := tool.WaitDone(dctx, "a1")
	cancel()
	require.NoError(t, err)
	require.Equal(t, "true", got, "Curator queued first: it must get the lock first")
	require.Equal(t, parts[1], ido(t, ctx, tool, "mutex.node j"))
	inotYet(t, goRes, 300*time.Millisecond, "the Go waiter while Curator holds")

	ido(t, ctx, tool, "mutex.release j")
	l2 := iget(t, goRes, 10*time.Second, "the Go waiter after Curator released")
	require.Equal(t, parts[2], l2.Node())
	require.NoError(t, l2.Release(ctx))

	iassertNoChildren(t, srv.ConnectString(), path, c1, c2)
}

func TestRevocationBothWays(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := istart(t, srv.ConnectString())
	c := inewClient(t, srv.ConnectString())
	ctx := ictx(t, 120*time.Second)

	t.Run("CuratorRevokesGo", func(t *testing.T) {
		const path = "/interop/revoke-go"
		released := make(chan error, 1)
		m := inewMutex(t, c, path, mutex.WithRevocationListener(func(l *mutex.Lease) {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			select {
			case released <- l.Release(rctx):
			default:
			}
		}))
		l, err := m.Acquire(ctx)
		require.NoError(t, err)

		ido(t, ctx, tool, "revoke %s", l.Node())
		select {
		case err := <-released:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the Go revocation listener was not called")
		}
		select {
		case <-l.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("lease.Done not closed after the release")
		}

		ido(t, ctx, tool, "mutex.new g %s", path)
		require.Equal(t, "true", ido(t, ctx, tool, "mutex.acquire g 10000"))
		ido(t, ctx, tool, "mutex.release g")
		iassertNoChildren(t, srv.ConnectString(), path, c)
	})

	t.Run("GoRevokesCurator", func(t *testing.T) {
		const path = "/interop/revoke-java"
		m := inewMutex(t, c, path)
		ido(t, ctx, tool, "mutex.new k %s", path)
		ido(t, ctx, tool, "mutex.revocable k release")
		require.Equal(t, "true", ido(t, ctx, tool, "mutex.acquire k -1"))
		node := ido(t, ctx, tool, "mutex.node k")
		parts := iwaitParticipants(t, m, 1)
		require.Equal(t, node, parts[0])

		require.NoError(t, mutex.Revoke(ctx, c, node))
		ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := tool.WaitEvent(ectx, "revoke k")
		require.NoError(t, err)
		ev, err := tool.WaitEvent(ectx, "revoked k ")
		require.NoError(t, err)
		require.Equal(t, "revoked k ok", ev)

		actx, cancel2 := context.WithTimeout(ctx, 10*time.Second)
		defer cancel2()
		l, err := m.Acquire(actx)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))

		// Revoking a node that is gone is not an error.
		require.NoError(t, mutex.Revoke(ctx, c, node))
		iassertNoChildren(t, srv.ConnectString(), path, c)
	})
}
