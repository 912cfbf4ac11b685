package mutex_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// iLockNode is the name of a Curator (and Go) mutex node.
var iLockNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$`)

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

// inotYet fails the test if ch delivers within d.
func inotYet(t testing.TB, ch <-chan acquired, d time.Duration, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s returned too early: lease %v, err %v", what, r.l != nil, r.err)
	case <-time.After(d):
	}
}

func iget(t testing.TB, ch <-chan acquired, d time.Duration, what string) *mutex.Lease {
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

func TestCuratorAndGoExclude(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := istart(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/interop/m"
	m := newMutex(t, c, path)
	ctx := testutil.Context(t, 120*time.Second)

	ido(t, ctx, tool, "mutex.new j %s", path)
	require.Equal(t, "true", ido(t, ctx, tool, "mutex.acquire j -1"))
	javaNode := ido(t, ctx, tool, "mutex.node j")
	require.True(t, strings.HasPrefix(javaNode, path+"/"), javaNode)

	l, err := m.TryAcquire(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, mutex.ErrLocked, "Go must see Curator's lock")
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	parts := testutil.WaitParticipants(t, m, 1, 15*time.Second)
	require.Equal(t, javaNode, parts[0], "a failed TryAcquire leaves no node")

	goRes := goAcquire(ctx, m)
	parts = testutil.WaitParticipants(t, m, 2, 15*time.Second)
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
	parts = testutil.WaitParticipants(t, m, 2, 15*time.Second)
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

	assertNoChildren(t, srv.ConnectString(), path, c)
}

func TestFairQueueMixed(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := istart(t, srv.ConnectString())
	c1, c2 := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/interop/fair"
	m1, m2 := newMutex(t, c1, path), newMutex(t, c2, path)
	ctx := testutil.Context(t, 120*time.Second)

	l1, err := m1.Acquire(ctx)
	require.NoError(t, err)

	ido(t, ctx, tool, "mutex.new j %s", path)
	require.NoError(t, tool.Async(ctx, "a1", "mutex.acquire j -1"))
	testutil.WaitParticipants(t, m1, 2, 15*time.Second)
	goRes := goAcquire(ctx, m2)
	parts := testutil.WaitParticipants(t, m1, 3, 15*time.Second)
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

	assertNoChildren(t, srv.ConnectString(), path, c1, c2)
}

func TestRevocationBothWays(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := istart(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)

	t.Run("CuratorRevokesGo", func(t *testing.T) {
		const path = "/interop/revoke-go"
		released := make(chan error, 1)
		m := newMutex(t, c, path, mutex.WithRevocationListener(func(l *mutex.Lease) {
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
		assertNoChildren(t, srv.ConnectString(), path, c)
	})

	t.Run("GoRevokesCurator", func(t *testing.T) {
		const path = "/interop/revoke-java"
		m := newMutex(t, c, path)
		ido(t, ctx, tool, "mutex.new k %s", path)
		ido(t, ctx, tool, "mutex.revocable k release")
		require.Equal(t, "true", ido(t, ctx, tool, "mutex.acquire k -1"))
		node := ido(t, ctx, tool, "mutex.node k")
		parts := testutil.WaitParticipants(t, m, 1, 15*time.Second)
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
		assertNoChildren(t, srv.ConnectString(), path, c)
	})
}
