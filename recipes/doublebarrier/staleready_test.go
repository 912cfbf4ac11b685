package doublebarrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// When every member's Leave is cancelled (its context ended before it began), ready stays
// behind with no member; a lone member of the next round must not pass by it with
// memberQty unmet.
func TestEnterDoesNotPassByAReadyOfARoundWithNoMembers(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c1, c2 := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/staleready/barrier"
	a, b := newMember(t, c1, path, 2), newMember(t, c2, path, 2)
	entered := make(chan error, 1)
	go func() { entered <- a.Enter(ctx) }()
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-entered)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, a.Leave(cancelled), context.Canceled)
	require.ErrorIs(t, b.Leave(cancelled), context.Canceled)
	for _, c := range []interface{ WaitGuaranteedDeletes(context.Context) error }{c1, c2} {
		require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	}

	lone := newMember(t, testutil.ConnectFailFast(t, srv.ConnectString()), path, 2)
	ectx, ecancel := context.WithTimeout(ctx, time.Second)
	defer ecancel()
	require.ErrorIs(t, lone.Enter(ectx), context.DeadlineExceeded,
		"a lone member entered a barrier of 2 by the ready its last round left (children %v)",
		testutil.Children(t, srv.ConnectString(), path))
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
	entered := make(chan error, 1)
	go func() { entered <- a.Enter(ctx) }()
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-entered)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, a.Leave(cancelled), context.Canceled)
	require.ErrorIs(t, b.Leave(cancelled), context.Canceled)
	assertNoMembers(t, srv.ConnectString(), path, c1, c2)
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

	lone := newMember(t, c, path, 2)
	ectx, ecancel := context.WithTimeout(ctx, time.Second)
	defer ecancel()
	require.ErrorIs(t, lone.Enter(ectx), context.DeadlineExceeded, "a lone member entered by a leftover ready")
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
