package mutex_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// A semaphore lease holds the children watch of its wait's listing. Someone else deletes
// its node and, with another contender joining at once, the lease must end lost.
func TestPipelinedSemaphoreForeignDeleteEndsLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	s, err := semaphore.New(c, "/pipelined/sem", 2)
	require.NoError(t, err)
	ctx := testutil.Context(t, 60*time.Second)
	l, err := s.Acquire(ctx)
	require.NoError(t, err)
	s2, err := semaphore.New(admin, "/pipelined/sem", 2)
	require.NoError(t, err)
	require.NoError(t, admin.Delete(ctx, l.Node()))
	l2, err := s2.Acquire(ctx)
	require.NoError(t, err)
	testutil.WaitClosed(t, l.Done(), 10*time.Second, "Done after the semaphore lease's node was deleted")
	require.Error(t, l.Release(ctx))
	require.NoError(t, l2.Release(ctx))
}

// A read lease on the hint path; a writer joins (the children watch fires, the lease reads
// its node), then someone else deletes the reader's node: the lease ends lost.
func TestPipelinedReadLeaseForeignDeleteAfterWriterJoinedEndsLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	rw, err := rwlock.New(c, "/pipelined/rw")
	require.NoError(t, err)
	ctx := testutil.Context(t, 60*time.Second)
	for range 2 {
		r, err := rw.ReadLock().Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, r.Release(ctx))
		require.Eventually(t, func() bool { return c.Watches() == 0 }, 10*time.Second, time.Millisecond)
	}
	r, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	rw2, err := rwlock.New(admin, "/pipelined/rw")
	require.NoError(t, err)
	wres := make(chan error, 1)
	go func() {
		w, err := rw2.WriteLock().Acquire(ctx)
		if err == nil {
			err = w.Release(ctx)
		}
		wres <- err
	}()
	require.Eventually(t, func() bool { return len(testutil.Children(t, srv.ConnectString(), "/pipelined/rw")) == 2 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, admin.Delete(ctx, r.Node()))
	testutil.WaitClosed(t, r.Done(), 10*time.Second, "Done after the read lease's node was deleted")
	require.ErrorIs(t, r.Release(ctx), rwlock.ErrLeaseLost)
	require.NoError(t, <-wres)
}

// Two semaphores of one client on one path, both leases held (their children watches on
// the leases' parent may be one registry watch): the first lease's release fires it; then
// someone else deletes the second lease's node: it must end lost.
func TestPipelinedTwoSemaphoresOneClientForeignDeleteEndsLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	s1, err := semaphore.New(c, "/pipelined/sem2", 2)
	require.NoError(t, err)
	s2, err := semaphore.New(c, "/pipelined/sem2", 2)
	require.NoError(t, err)
	ctx := testutil.Context(t, 60*time.Second)
	l1, err := s1.Acquire(ctx)
	require.NoError(t, err)
	l2, err := s2.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l1.Release(ctx))
	require.NoError(t, admin.Delete(ctx, l2.Node()))
	testutil.WaitClosed(t, l2.Done(), 10*time.Second, "Done of the second lease after its node was deleted")
	require.Error(t, l2.Release(ctx))
}

// The hint path, a contender from another client joins and gives up (the children watch
// fires, the lease reads its node), then the release's delete is applied and its reply
// lost with the connection: the resent delete's "no node" is this release's own.
func TestPipelinedResentReleaseAfterContenderCameAndWentIsItsOwn(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed atomic.Bool
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithErrorPolicy(framework.SessionErrorPolicy),
		framework.WithRequestHook(func(op string) {
			if op == "delete" && armed.CompareAndSwap(true, false) {
				proxy.HoldReplies()
			}
		}))
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/pipelined/resent"
	m := newMutex(t, c, path)
	warmPipe(t, c, m)
	ctx := testutil.Context(t, 60*time.Second)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	_, err = newMutex(t, admin, path).TryAcquire(ctx)
	require.ErrorIs(t, err, mutex.ErrLocked)
	require.NoError(t, admin.WaitGuaranteedDeletes(ctx))
	require.Eventually(t, func() bool { return testutil.ZKWatchers(t, c, l.Node()).Data == 1 }, 10*time.Second, time.Millisecond,
		"the lease did not read its node after the children changed")
	node := l.Node()
	armed.Store(true)
	res := make(chan error, 1)
	go func() { res <- l.Release(ctx) }()
	require.Eventually(t, func() bool {
		st, err := admin.Exists(ctx, node)
		return err == nil && st == nil
	}, 30*time.Second, 10*time.Millisecond)
	proxy.DropConnections()
	proxy.Heal()
	require.NoError(t, testutil.Result(t, res, 30*time.Second, "Release"))
}
