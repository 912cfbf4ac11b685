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

// A member does not go in alone by a ready that a whole round created and deleted before
// its node was there. Once c (memberQty 2) has synced, at the first of two moments — its
// look at ready answered (none there; an exists watch set), or its create of its node
// about to go out — b1 and b2 enter and leave: ready is created and deleted with the
// round. c then has its node and lists one member of 2: it must wait (its node was never
// counted), not take a NodeCreated of a watch set before its node for "the barrier opened
// while our node was there".
func TestEnterNotInAloneByRoundBetweenItsWatchAndItsNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, time.Minute)
	const path = "/alone/between-watch-and-node"
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	b1, b2 := newMember(t, other, path, 2), newMember(t, other, path, 2)

	var armed atomic.Bool
	roundErr := make(chan error, 1)
	round := func() {
		in1 := testutil.Go(ctx, b1.Enter)
		err := b2.Enter(ctx)
		if err2 := <-in1; err == nil {
			err = err2
		}
		if err == nil {
			out1 := testutil.Go(ctx, b1.Leave)
			err = b2.Leave(ctx)
			if err2 := <-out1; err == nil {
				err = err2
			}
		}
		roundErr <- err
	}
	cc := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestObserver(func(r framework.RequestInfo) {
		if r.Op == "exists" && r.Path == path+"/ready" && r.Err == nil && armed.CompareAndSwap(true, false) {
			round()
		}
	}), framework.WithRequestHook(func(op string) {
		if op == "create" && armed.CompareAndSwap(true, false) {
			round()
		}
	}))
	c := newMember(t, cc, path, 2)
	armed.Store(true)
	entered := testutil.Go(ctx, c.Enter)
	require.NoError(t, testutil.Result(t, roundErr, 30*time.Second, "the round of b1 and b2"))
	waitChildren(t, srv.ConnectString(), path, 1) // c's node, and no ready
	select {
	case err := <-entered:
		kids := testutil.Children(t, srv.ConnectString(), path)
		if err == nil {
			require.NoError(t, c.Leave(ctx))
		}
		t.Fatalf("c's Enter returned (%v) with its node alone (memberQty 2, children %v), by the NodeCreated of a ready "+
			"created and deleted by a round that ended before c's node was made", err, kids)
	case <-time.After(time.Second): // a negative check: c waits
	}

	d := newMember(t, other, path, 2)
	require.NoError(t, d.Enter(ctx))
	require.NoError(t, testutil.Result(t, entered, 20*time.Second, "c's Enter"))
	out := testutil.Go(ctx, d.Leave)
	require.NoError(t, c.Leave(ctx))
	require.NoError(t, testutil.Result(t, out, 20*time.Second, "d's Leave"))
	assertNoMembers(t, srv.ConnectString(), path, cc, other)
}
