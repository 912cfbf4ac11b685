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
// also when the barrier's node was removed and made again in between (it is a container:
// the server removes it once it is empty, and the next round's first create makes it
// again, its cversion starting over). a and b (memberQty 2) are in, a the lowest; b
// leaves: it deletes its node and waits for a's. b's next listing is held (its request
// hook) while a leaves (its node and ready go: the barrier is empty), the empty barrier
// node is removed (by hand here, as the server's container check does), and a next
// round, p and q, enters (a new barrier node, a new ready). The new barrier node shows
// the same cversion and child count as b's first listing (3 and 3): counted by them, no
// child was made since. b's listing then shows p, q and the new ready, and b returns: the
// ready is a later round's. The package doc: a member that leaves "counts the children
// made since its first listing, by the barrier's cversion, and looks at ready before it
// watches such a node". No watch of b's session may stay on p's or q's node, which stay
// while the next round is in.
func TestLeaveEndedByNextRoundInRemadeBarrierLeavesNoWatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/leavewatches/remade-barrier"
	adm := testutil.ConnectFailFast(t, srv.ConnectString())

	proceed := make(chan struct{})
	var lists atomic.Int32
	var armed atomic.Bool
	cb := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op != "getChildren" || !armed.Load() || lists.Add(1) != 2 {
			return
		}
		// b's listing after a's node went: held until the next round is in.
		select {
		case <-proceed:
		case <-ctx.Done():
		}
	}))
	ca := testutil.ConnectFailFast(t, srv.ConnectString())
	b := newMember(t, cb, path, 2)
	a := lowestAfter(t, ca, path, 2, b) // a is the lowest: b deletes its node first

	in := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, testutil.Result(t, in, 20*time.Second, "a's Enter"))
	_, first, err := adm.Children(ctx, path)
	require.NoError(t, err)
	armed.Store(true)
	bLeft := testutil.Go(ctx, b.Leave)
	require.NoError(t, testutil.Result(t, testutil.Go(ctx, a.Leave), 20*time.Second, "a's Leave"))

	// The empty barrier node goes, as the server's container check removes it.
	require.Empty(t, testutil.Children(t, srv.ConnectString(), path))
	require.NoError(t, adm.Delete(ctx, path))

	// The next round, p and q, makes the barrier node again.
	cpq := testutil.ConnectFailFast(t, srv.ConnectString())
	p, q := newMember(t, cpq, path, 2), newMember(t, cpq, path, 2)
	in = testutil.Go(ctx, p.Enter)
	require.NoError(t, q.Enter(ctx))
	require.NoError(t, testutil.Result(t, in, 20*time.Second, "p's Enter"))
	kids, again, err := adm.Children(ctx, path)
	require.NoError(t, err)
	require.Len(t, kids, 3, "p, q and the next round's ready")
	require.Equal(t, first.Cversion, again.Cversion, "the barrier node made again shows the cversion b first listed")
	require.Equal(t, first.NumChildren, again.NumChildren)

	close(proceed) // b lists: p, q and the next round's ready
	require.NoError(t, testutil.Result(t, bLeft, 20*time.Second, "b's Leave"))
	assertNoBarrierWatches(t, srv, cb, path, "after a Leave ended by a next round in the barrier node made again ("+
		p.Node()+", "+q.Node()+")")

	pOut := testutil.Go(ctx, p.Leave)
	require.NoError(t, q.Leave(ctx))
	require.NoError(t, testutil.Result(t, pOut, 20*time.Second, "p's Leave"))
	assertNoMembers(t, srv.ConnectString(), path, ca, cb, cpq)
}
