package doublebarrier_test

import (
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

// A member whose node is gone does not wait for a member that went in late by the next
// round's ready. a and b (memberQty 2) are in; b (not the lowest) leaves: it deletes its
// node and waits for a's. b's next listing is held (its request hook) while a leaves
// (its node and the round's ready go) and a next round runs: p and q enter (a new
// ready); they leave, and just before the last of them sends its transaction (its node
// and that ready: its request hook), e enters late by that ready (and marks its node).
// The next round's ready is gone; e, a member of the next round, is in. b's listing then
// shows only e's node and no ready. The package doc: a member whose node is gone "does not
// wait for a next round's members"; b's round ended when a's transaction went through.
// b's Leave must return while e is in.
func TestLeaveDoesNotWaitForNextRoundsLateMember(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/rounds/next-late"
	checker := testutil.ConnectFailFast(t, srv.ConnectString())

	proceed := make(chan struct{})
	var lists atomic.Int32
	var armedB atomic.Bool
	cb := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op != "getChildren" || !armedB.Load() || lists.Add(1) != 2 {
			return
		}
		// b's listing after its node went: held until the next round is as described.
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
	armedB.Store(true)
	bLeft := testutil.Go(ctx, b.Leave)
	require.NoError(t, testutil.Result(t, testutil.Go(ctx, a.Leave), 20*time.Second, "a's Leave"))

	// The next round: p and q, and e late by their ready.
	ce := testutil.ConnectFailFast(t, srv.ConnectString())
	e := newMember(t, ce, path, 2)
	var armedPQ atomic.Bool
	eIn := make(chan error, 1)
	cpq := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op == "multi" && armedPQ.CompareAndSwap(true, false) {
			eIn <- e.Enter(ctx) // before the last of p and q sends its transaction
		}
	}))
	p, q := newMember(t, cpq, path, 2), newMember(t, cpq, path, 2)
	in = testutil.Go(ctx, p.Enter)
	require.NoError(t, q.Enter(ctx))
	require.NoError(t, testutil.Result(t, in, 20*time.Second, "p's Enter"))
	armedPQ.Store(true)
	pLeft, qLeft := testutil.Go(ctx, p.Leave), testutil.Go(ctx, q.Leave)
	require.NoError(t, testutil.Result(t, eIn, 20*time.Second, "e's Enter, late by the next round's ready"))
	require.Eventually(t, func() bool { return !exists(ctx, checker, path+"/ready") }, 20*time.Second, 5*time.Millisecond,
		"the next round's ready goes with the last of p and q")

	close(proceed) // b lists: e's node (and maybe p's or q's, waiting for e), no ready
	select {
	case err := <-bLeft:
		assert.NoError(t, err, "b's Leave")
		bLeft = nil
	case <-time.After(5 * time.Second):
		t.Errorf("b's Leave still waits, 5 s after its listing was let through, with its round over "+
			"(a and its ready gone): it waits for e (%s), a member of the next round (children %v)",
			e.Node(), testutil.Children(t, srv.ConnectString(), path))
	}
	require.NoError(t, e.Leave(ctx))
	require.NoError(t, testutil.Result(t, pLeft, 20*time.Second, "p's Leave"))
	require.NoError(t, testutil.Result(t, qLeft, 20*time.Second, "q's Leave"))
	if bLeft != nil {
		require.NoError(t, testutil.Result(t, bLeft, 20*time.Second, "b's Leave"))
	}
	assertNoMembers(t, srv.ConnectString(), path, ca, cb, ce, cpq)
}
