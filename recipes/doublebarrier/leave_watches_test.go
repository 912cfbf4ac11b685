package doublebarrier_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// assertNoBarrierWatches checks that the server holds no watch of c's session on the
// barrier's nodes once the member is out.
func assertNoBarrierWatches(t *testing.T, srv *zktest.Server, c *framework.Client, path, what string) {
	t.Helper()
	left := underPath(serverWatches(t, srv.Addr(), c.SessionID()), path)
	assert.Empty(t, left, "%s: the server still holds watches of the member's session (0x%x) on the barrier's nodes "+
		"(the client counts %d unfired watches)", what, c.SessionID(), c.Watches())
}

// A Leave cut short while it waits for another member leaves no watch behind. x and y
// (memberQty 2) are in, x entered first (the NodeCreated of y's ready let it in: no
// watch of its Enter is left). x, the lowest, leaves and waits for y's node (a data
// watch on it); its context is cancelled. x's node goes; the watch on y's node, which
// stays until y leaves, must not.
func TestLeaveCutShortWhileWaitingLeavesNoWatch(t *testing.T) {
	testutil.KnownDefect(t, "a watch on a node that stays cannot be taken back without removeWatches, which go-zookeeper cannot send")
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, time.Minute)
	const path = "/leavewatches/cut-short"
	waiting := make(chan struct{})
	var armed atomic.Bool
	cx := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestObserver(func(r framework.RequestInfo) {
		if r.Op == "getData" && r.Err == nil && armed.CompareAndSwap(true, false) {
			close(waiting)
		}
	}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	x, y := newMember(t, cx, path, 2), newMember(t, other, path, 2)
	for x.Node() > y.Node() {
		y = newMember(t, other, path, 2)
	}
	in := testutil.Go(ctx, x.Enter)
	waitChildren(t, srv.ConnectString(), path, 1)
	require.NoError(t, y.Enter(ctx))
	require.NoError(t, testutil.Result(t, in, 20*time.Second, "x's Enter"))
	require.Empty(t, underPath(serverWatches(t, srv.Addr(), cx.SessionID()), path), "x's Enter left a watch")

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	armed.Store(true)
	left := testutil.Go(lctx, x.Leave)
	testutil.WaitClosed(t, waiting, 20*time.Second, "x's Leave waits for y")
	cancel()
	require.ErrorIs(t, testutil.Result(t, left, 20*time.Second, "x's cancelled Leave"), context.Canceled)
	require.NoError(t, cx.WaitGuaranteedDeletes(ctx))
	assertNoBarrierWatches(t, srv, cx, path, "after a Leave cut short")

	require.NoError(t, y.Leave(ctx))
	assertNoMembers(t, srv.ConnectString(), path, cx, other)
}

// A Leave cut short leaves no watch of its Enter behind. a and b (memberQty 2) are in;
// L enters late, by the ready that is there (its look at ready watches it). L's Leave is
// cut short (its context has ended): its node goes, ready stays for a and b; the watch on
// ready must not.
func TestLeaveCutShortOfLateMemberLeavesNoWatch(t *testing.T) {
	testutil.KnownDefect(t, "a watch on a node that stays cannot be taken back without removeWatches, which go-zookeeper cannot send")
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, time.Minute)
	const path = "/leavewatches/late"
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	cl := testutil.ConnectFailFast(t, srv.ConnectString())
	a, b := newMember(t, other, path, 2), newMember(t, other, path, 2)
	in := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-in)
	late := newMember(t, cl, path, 2)
	require.NoError(t, late.Enter(ctx), "a late member")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, late.Leave(cancelled), context.Canceled)
	require.NoError(t, cl.WaitGuaranteedDeletes(ctx))
	waitChildren(t, srv.ConnectString(), path, 3) // a, b and ready
	assertNoBarrierWatches(t, srv, cl, path, "after a late member's Leave cut short")

	out := testutil.Go(ctx, a.Leave)
	require.NoError(t, b.Leave(ctx))
	require.NoError(t, testutil.Result(t, out, 20*time.Second, "a's Leave"))
	assertNoMembers(t, srv.ConnectString(), path, cl, other)
}

// A Leave that ends because the round is over leaves no watch on a next round's node.
// a and b (memberQty 2) are in; b (not the lowest) leaves: it deletes its node and
// waits for a's. b's client then hears nothing for a while (the replies to it are held):
// a leaves (its node and ready go), and a next round, n1 and n2, enters (a new ready).
// b then hears that a's node is gone, lists n1, n2 and the new ready, watches the lowest
// of them, sees that ready is a later round's and returns. The watch on that node, which
// stays while the next round is in, must not.
func TestLeaveEndedByNextRoundLeavesNoWatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	const path = "/leavewatches/next-round"
	waiting := make(chan struct{})
	var armed atomic.Bool
	cb := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "getData" && r.Err == nil && armed.CompareAndSwap(true, false) {
				close(waiting)
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	a, b := newMember(t, other, path, 2), newMember(t, cb, path, 2)
	for a.Node() > b.Node() {
		a = newMember(t, other, path, 2)
	}
	in := testutil.Go(ctx, b.Enter)
	waitChildren(t, srv.ConnectString(), path, 1)
	require.NoError(t, a.Enter(ctx))
	require.NoError(t, testutil.Result(t, in, 20*time.Second, "b's Enter"))

	armed.Store(true)
	left := testutil.Go(ctx, b.Leave)
	testutil.WaitClosed(t, waiting, 20*time.Second, "b's Leave waits for a")
	proxy.HoldReplies()
	require.NoError(t, a.Leave(ctx))
	n1, n2 := newMember(t, other, path, 2), newMember(t, other, path, 2)
	in = testutil.Go(ctx, n1.Enter)
	require.NoError(t, n2.Enter(ctx))
	require.NoError(t, <-in)
	proxy.Heal()
	require.NoError(t, testutil.Result(t, left, 20*time.Second, "b's Leave"))
	assertNoBarrierWatches(t, srv, cb, path, "after a Leave ended by a next round")

	out := testutil.Go(ctx, n1.Leave)
	require.NoError(t, n2.Leave(ctx))
	require.NoError(t, testutil.Result(t, out, 20*time.Second, "n1's Leave"))
	assertNoMembers(t, srv.ConnectString(), path, cb, other)
}
