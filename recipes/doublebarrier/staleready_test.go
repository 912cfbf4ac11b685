package doublebarrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
