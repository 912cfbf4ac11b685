package doublebarrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// requireLoneWaits checks that the lone member (memberQty 2) does not go in by the ready
// it finds, deletes that ready, and waits; it then cancels the member's Enter.
func requireLoneWaits(t *testing.T, ctx context.Context, connect, path string, lone *doublebarrier.DoubleBarrier) {
	t.Helper()
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	entered := testutil.Go(ectx, lone.Enter)
	select {
	case err := <-entered:
		kids := testutil.Children(t, connect, path)
		if err == nil {
			require.NoError(t, lone.Leave(ctx))
		}
		t.Fatalf("a lone member's Enter (memberQty 2) returned (%v) by the ready its last round left (children %v)", err, kids)
	case <-time.After(time.Second): // a negative check: it waits
	}
	waitChildren(t, connect, path, 1) // its node, and no ready
	cancel()
	require.ErrorIs(t, testutil.Result(t, entered, 20*time.Second, "the lone member's Enter"), context.Canceled)
}

// When every member's Leave is cancelled (its context ended before it began), ready may
// stay behind with no member; a lone member of the next round must not pass by it with
// memberQty unmet.
func TestEnterDoesNotPassByAReadyOfARoundWithNoMembers(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c1, c2 := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/staleready/barrier"
	a, b := newMember(t, c1, path, 2), newMember(t, c2, path, 2)
	entered := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-entered)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, a.Leave(cancelled), context.Canceled)
	require.ErrorIs(t, b.Leave(cancelled), context.Canceled)
	for _, c := range []*framework.Client{c1, c2} {
		require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	}

	c3 := testutil.ConnectFailFast(t, srv.ConnectString())
	requireLoneWaits(t, ctx, srv.ConnectString(), path, newMember(t, c3, path, 2))
	assertNoMembers(t, srv.ConnectString(), path, c1, c2, c3)
}

// A ready with no member (left by a round whose members are gone, e.g. a Curator member
// that stopped between deleting its node and ready) does not let a lone member in; that
// member deletes it (it is older than its node and than every member node) and waits.
// A late member of a round under way still goes in by its ready (memberQty is a
// threshold): a member node older than ready is there.
func TestEnterDoesNotPassByALeftoverReady(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/leftover/barrier"
	_, err := c.Create(ctx, path+"/ready", nil, framework.WithParents())
	require.NoError(t, err)

	requireLoneWaits(t, ctx, srv.ConnectString(), path, newMember(t, c, path, 2))
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.Empty(t, testutil.Children(t, srv.ConnectString(), path), "the leftover ready is deleted")

	// A round under way, and a late member.
	a, b := newMember(t, c, path, 2), newMember(t, c, path, 2)
	in := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, testutil.Result(t, in, 20*time.Second, "a's Enter"))
	late := newMember(t, c, path, 2)
	require.NoError(t, late.Enter(ctx), "a late member of a round under way")
	outs := []<-chan error{testutil.Go(ctx, a.Leave), testutil.Go(ctx, b.Leave)}
	require.NoError(t, late.Leave(ctx))
	for _, o := range outs {
		require.NoError(t, testutil.Result(t, o, 20*time.Second, "Leave"))
	}
	assertNoMembers(t, srv.ConnectString(), path, c)
}

// When every member's Leave is cut short by its context, the member whose node goes last
// also deletes ready: nothing is left under the barrier once the cleanups are done.
func TestCancelledLeavesLeaveNoReady(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c1, c2 := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/cancelledleaves/barrier"
	a, b := newMember(t, c1, path, 2), newMember(t, c2, path, 2)
	entered := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-entered)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, a.Leave(cancelled), context.Canceled)
	require.ErrorIs(t, b.Leave(cancelled), context.Canceled)
	assertNoMembers(t, srv.ConnectString(), path, c1, c2)
}
