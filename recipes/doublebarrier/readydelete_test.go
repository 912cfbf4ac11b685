package doublebarrier_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestLeaveReadyDeleteRetrySparesNextRound: the last member's ready delete is in flight when the connection drops; meanwhile this
// round's ready goes (as if that delete had been applied, or a fellow member's) and the
// next round makes its own. The foreground retry of the plain delete must not remove it.
func TestLeaveReadyDeleteRetrySparesNextRound(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	g := newGate()
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(g.hook), framework.WithRetryPolicy(testutil.FastRetry(t)))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/review-ready"
	b := newMember(t, c, path, 1)
	require.NoError(t, b.Enter(ctx))
	next := newMember(t, other, path, 1)
	stalled := make(chan struct{})
	g.onLeaveDelete(2, func() { proxy.Stall(); close(stalled) })
	left := testutil.Go(ctx, b.Leave)
	testutil.WaitClosed(t, stalled, 20*time.Second, "ready delete")
	require.NoError(t, other.Delete(ctx, path+"/ready"))
	require.NoError(t, next.Enter(ctx)) // the next round: a new ready
	st, err := other.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, st)
	proxy.DropConnections()
	proxy.Heal()
	require.NoError(t, testutil.Result(t, left, 30*time.Second, "Leave"))
	st2, err := other.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, st2, "the next round's ready (czxid %d) was deleted by the retried delete of the round before", st.Czxid)
	require.NoError(t, next.Leave(ctx))
}
