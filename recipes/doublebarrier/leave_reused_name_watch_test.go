package doublebarrier_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A Leave that ends because the round is over leaves no watch on a next round's node,
// also when that node has the name of a member of its round (names are reused: a value
// keeps its name from one Enter to the next). a and b (memberQty 2) are in; b (not the
// lowest) leaves: it deletes its node and waits for a's. b's client then hears nothing
// for a while (the replies to it are held): a leaves (its node and ready go), and a
// next round, a again (same name) and n (a higher name), enters (a new ready). b then
// hears that a's first node is gone, lists a's new node, n and the new ready, and returns:
// ready is a later round's. The package doc: a member whose node is gone "does not wait
// for a next round's members"; the Leave's code looks before watching a node made since
// its first listing, "a watch on a next round's node would stay behind", but a's new node
// carries a name of that listing. No watch of b's session may stay on a's new node,
// which stays while the next round is in.
func TestLeaveEndedByNextRoundWithReusedNameLeavesNoWatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	const path = "/leavewatches/reused-name"
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
	b := newMember(t, cb, path, 2)
	a := lowestAfter(t, other, path, 2, b)
	in := testutil.Go(ctx, b.Enter)
	waitChildren(t, srv.ConnectString(), path, 1)
	require.NoError(t, a.Enter(ctx))
	require.NoError(t, testutil.Result(t, in, 20*time.Second, "b's Enter"))

	armed.Store(true)
	left := testutil.Go(ctx, b.Leave)
	testutil.WaitClosed(t, waiting, 20*time.Second, "b's Leave waits for a")
	proxy.HoldReplies()
	first := a.Node()
	require.NoError(t, a.Leave(ctx))
	require.Equal(t, first, a.Node(), "a keeps its name for its next Enter")
	n := newMember(t, other, path, 2)
	for n.Node() < a.Node() {
		n = newMember(t, other, path, 2)
	}
	in = testutil.Go(ctx, n.Enter)
	require.NoError(t, a.Enter(ctx))
	require.NoError(t, testutil.Result(t, in, 20*time.Second, "n's Enter"))
	proxy.Heal()
	require.NoError(t, testutil.Result(t, left, 20*time.Second, "b's Leave"))
	assertNoBarrierWatches(t, srv, cb, path, "after a Leave ended by a next round whose lowest node ("+a.Node()+
		") has a name of its round")

	out := testutil.Go(ctx, n.Leave)
	require.NoError(t, a.Leave(ctx))
	require.NoError(t, testutil.Result(t, out, 20*time.Second, "n's Leave"))
	assertNoMembers(t, srv.ConnectString(), path, cb, other)
}
