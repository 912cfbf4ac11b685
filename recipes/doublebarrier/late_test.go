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

// A member that sees a round's ready before it makes its node does not go in by it when
// the round ends in between: ready is gone once its node is there, and it waits for the
// count. b1 and b2 (memberQty 2) are in; c looks at ready (there), and before c's create
// of its node is sent (the request hook), b1 and b2 leave, the last deleting ready. c is
// then alone: it must wait, and goes in with d.
func TestEnterNotInByReadyGoneBeforeItsNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, time.Minute)
	const path = "/late/barrier"
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	b1, b2 := newMember(t, other, path, 2), newMember(t, other, path, 2)
	in1 := testutil.Go(ctx, b1.Enter)
	require.NoError(t, b2.Enter(ctx))
	require.NoError(t, <-in1)

	var armed atomic.Bool
	roundErr := make(chan error, 1)
	cc := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op != "create" || !armed.CompareAndSwap(true, false) {
			return
		}
		out1 := testutil.Go(ctx, b1.Leave)
		err := b2.Leave(ctx)
		if err == nil {
			err = <-out1
		}
		roundErr <- err
	}))
	c := newMember(t, cc, path, 2)
	armed.Store(true)
	entered := testutil.Go(ctx, c.Enter)
	require.NoError(t, <-roundErr, "the round of b1 and b2")
	waitChildren(t, srv.ConnectString(), path, 1) // c's node, and no ready
	select {
	case err := <-entered:
		if err == nil {
			require.NoError(t, c.Leave(ctx))
		}
		t.Fatalf("c's Enter returned (%v) with its node alone (memberQty 2), by a ready deleted before its node was made", err)
	case <-time.After(time.Second): // a negative check: c waits
	}

	d := newMember(t, other, path, 2)
	require.NoError(t, d.Enter(ctx))
	require.NoError(t, <-entered)
	out := testutil.Go(ctx, d.Leave)
	require.NoError(t, c.Leave(ctx))
	require.NoError(t, <-out)
	assertNoMembers(t, srv.ConnectString(), path, cc, other)
}

// The last member out does not return while a member that entered after its listing
// (by the round's ready, before the last member's transaction deleted it) is still in.
// a and b (memberQty 2) are in and leave; the lowest of them is the last, and before its
// transaction (its node and ready) is sent (the request hook), c enters: ready is there,
// and so is the last member's node. c is in until it leaves; the last member's Leave
// waits for it.
func TestLeaveWaitsForMemberThatEnteredBeforeItsTransaction(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, time.Minute)
	const path = "/late/last"
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	c := newMember(t, other, path, 2)
	var armed atomic.Bool
	cIn := make(chan error, 1)
	ab := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op == "multi" && armed.CompareAndSwap(true, false) {
			cIn <- c.Enter(ctx)
		}
	}))
	a, b := newMember(t, ab, path, 2), newMember(t, ab, path, 2)
	in := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-in)

	last, first := a, b // the lowest node is the last to go
	if b.Node() < a.Node() {
		last, first = b, a
	}
	armed.Store(true)
	outFirst, outLast := testutil.Go(ctx, first.Leave), testutil.Go(ctx, last.Leave)
	require.NoError(t, <-cIn, "c did not enter by the round's ready")
	select {
	case err := <-outLast:
		require.NoError(t, c.Leave(ctx))
		t.Fatalf("the last member's Leave returned (%v) while c, which entered by the round's ready, was still in", err)
	case <-time.After(time.Second): // a negative check: the last member waits for c
	}
	require.NoError(t, c.Leave(ctx))
	require.NoError(t, <-outLast)
	require.NoError(t, <-outFirst)
	assertNoMembers(t, srv.ConnectString(), path, ab, other)
}
