package multilock_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/locks"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// A multi-lock Acquire cancelled while its connection is stalled, holding its first lock
// and waiting for its second, returns at once and releases the first in the background,
// instead of waiting for that release until the cleanup's own bound (10 s). No request can
// be answered while the proxy stalls, and the connection is not given up for 40 s (2/3 of
// the session timeout): any delete that completed before Acquire returned was waited for.
// Once the proxy heals, nothing of the cancelled Acquire is left.
func TestCancelledAcquireOnStalledConnectionReturnsAtOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	const a, b = "/cancelstall/ml/a", "/cancelstall/ml/b"
	var deletes atomic.Int32
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "delete" && strings.HasPrefix(r.Path, a+"/") { // the release of a
				deletes.Add(1)
			}
		}))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	ml, err := multilock.NewFromPaths(ca, a, b)
	require.NoError(t, err)
	mb, err := mutex.New(cb, b)
	require.NoError(t, err)
	ctx := testutil.Context(t, 60*time.Second)

	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make(chan error, 1)
	go func() { _, err := ml.Acquire(actx); res <- err }()
	// Holding a, waiting for b (a try's node at b comes and goes first).
	require.Eventually(t, func() bool {
		return len(testutil.Children(t, srv.ConnectString(), a)) == 1 && len(testutil.Children(t, srv.ConnectString(), b)) == 2
	}, 20*time.Second, 10*time.Millisecond, "the multi-lock does not hold a and wait for b")

	proxy.Stall()
	cancel()
	select {
	case err := <-res:
		require.ErrorIs(t, err, context.Canceled)
	case <-ctx.Done():
		t.Fatal("the cancelled Acquire did not return")
	}
	require.Zero(t, deletes.Load(), "the cancelled Acquire waited for a delete on the stalled connection before it returned")

	proxy.Heal()
	testutil.RequireNoChildren(t, srv.ConnectString(), a)
	require.Eventually(t, func() bool { return len(testutil.Children(t, srv.ConnectString(), b)) == 1 },
		20*time.Second, 20*time.Millisecond, "the cancelled Acquire's node for b is left")
	require.NoError(t, lb.Release(ctx))
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), b)
}

// A multi-lock made by New, cancelled while its connection is stalled, holding its first
// lock and waiting for its second, returns within locks.CancelGrace (as NewFromPaths's does) and its first
// lock is released in the background: no request can be answered while the proxy stalls,
// and the connection is not given up for 40 s. Once the proxy heals, the guaranteed
// deletes leave nothing of the cancelled Acquire.
func TestCancelledOrderedAcquireOnStalledConnectionReturnsAtOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	const a, b = "/cancelstall/ordered/a", "/cancelstall/ordered/b"
	var deletes atomic.Int32
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "delete" && strings.HasPrefix(r.Path, a+"/") { // the release of a
				deletes.Add(1)
			}
		}))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	ma, err := mutex.New(ca, a)
	require.NoError(t, err)
	mab, err := mutex.New(ca, b)
	require.NoError(t, err)
	ml, err := multilock.New(multilock.From(ma.Acquire), multilock.From(mab.Acquire))
	require.NoError(t, err)
	mb, err := mutex.New(cb, b)
	require.NoError(t, err)
	ctx := testutil.Context(t, 60*time.Second)

	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make(chan error, 1)
	go func() { _, err := ml.Acquire(actx); res <- err }()
	require.Eventually(t, func() bool {
		return len(testutil.Children(t, srv.ConnectString(), a)) == 1 && len(testutil.Children(t, srv.ConnectString(), b)) == 2
	}, 20*time.Second, 10*time.Millisecond, "the multi-lock does not hold a and wait for b")

	proxy.Stall()
	start := time.Now()
	cancel()
	select {
	case err := <-res:
		require.ErrorIs(t, err, context.Canceled)
	case <-ctx.Done():
		t.Fatal("the cancelled Acquire did not return")
	}
	// It may wait locks.CancelGrace for its give-back (a live connection answers by then,
	// and the locks are free when it returns), not the 10 s clean-up bound.
	took := time.Since(start)
	require.Less(t, took, locks.CancelGrace+4*time.Second, "the cancelled Acquire returned after %v, having waited for a delete on the stalled connection (%d seen)", took.Round(time.Millisecond), deletes.Load())

	proxy.Heal()
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), a)
	require.Eventually(t, func() bool { return len(testutil.Children(t, srv.ConnectString(), b)) == 1 },
		20*time.Second, 20*time.Millisecond, "the cancelled Acquire's node for b is left")
	require.NoError(t, lb.Release(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), b)
}

// A NewFromPaths Acquire whose try of b finds b taken gives back its node at b; that
// delete goes out on a connection that stalls (as it goes out) until the Acquire's
// deadline has passed. The Acquire returns by its deadline, leaving the delete to the
// background, instead of waiting for it until the cleanup's own bound (10 s): no request
// can be answered while the proxy stalls, and the connection is not given up for 40 s, so
// a delete given up before Acquire returned was waited for. Once the proxy heals, nothing
// of the Acquire is left.
func TestAcquireWithDeadlineOnStalledGiveBackReturnsByDeadline(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	const a, b = "/cancelstall/deadline/a", "/cancelstall/deadline/b"
	var stalled atomic.Bool
	var deletes atomic.Int32
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "delete" && stalled.CompareAndSwap(false, true) { // the try's give-back at b
				proxy.Stall()
			}
		}),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "delete" && strings.HasPrefix(r.Path, b+"/") {
				deletes.Add(1)
			}
		}))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	ml, err := multilock.NewFromPaths(ca, a, b)
	require.NoError(t, err)
	mb, err := mutex.New(cb, b)
	require.NoError(t, err)
	ctx := testutil.Context(t, 60*time.Second)

	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)
	actx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res := make(chan error, 1)
	go func() { _, err := ml.Acquire(actx); res <- err }()
	select {
	case err := <-res:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-ctx.Done():
		t.Fatal("the Acquire did not return")
	}
	require.True(t, stalled.Load(), "the try of b gave nothing back")
	require.Zero(t, deletes.Load(), "the Acquire waited past its deadline for a delete on the stalled connection before it returned")

	proxy.Heal()
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), a)
	require.Eventually(t, func() bool { return len(testutil.Children(t, srv.ConnectString(), b)) == 1 },
		20*time.Second, 20*time.Millisecond, "the Acquire's node for b is left")
	require.NoError(t, lb.Release(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), b)
}
