package doublebarrier_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// ErrSessionLost: "returned by Leave when the member's node vanished while it was inside
// the barrier: its session expired, and the other members stopped counting it". Another
// client deletes a member's node while the member is inside; the member's session is the
// same, alive all along. Leave must not tell the caller that its session was lost (a
// caller that holds a lock or a lease in that session would drop them for nothing).
func TestLeaveAfterNodeDeletedByAnotherClientIsNotSessionLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	cx := testutil.ConnectFailFast(t, srv.ConnectString())
	c1 := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/deleted-by-other"
	x, a := newMember(t, cx, path, 2), newMember(t, c1, path, 2)
	rx := testutil.Go(ctx, x.Enter)
	require.NoError(t, a.Enter(ctx))
	require.NoError(t, testutil.Result(t, rx, 10*time.Second, "Enter"))
	sid, gen := cx.SessionID(), cx.Generation()

	require.NoError(t, other.Delete(ctx, x.Node()))
	ra := testutil.Go(ctx, a.Leave)
	err := x.Leave(ctx)
	t.Logf("Leave of the member whose node another client deleted: %v", err)
	require.Equal(t, sid, cx.SessionID(), "the session changed")
	require.Equal(t, gen, cx.Generation(), "the session changed")
	require.NotErrorIs(t, err, doublebarrier.ErrSessionLost, "Leave says the member's session was lost; it was not (session 0x%x alive)", sid)
	require.NoError(t, testutil.Result(t, ra, 15*time.Second, "the other member's Leave"))
}
