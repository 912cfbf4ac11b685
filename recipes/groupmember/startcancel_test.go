package groupmember_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/zktest"
)

// Start whose context ends while the connection is stalled returns the context's error
// at once: the clean-up of the member it gives up (its node's create, in flight) honours
// the context, and finishes in the background (WaitGuaranteedDeletes waits for it), leaving
// no node. Before, Start waited for the member's Close, bounded only by its 10 s clean-up
// timeout (14 s after the cancel in the cancellation fuzzer).
func TestStartCancelledWhileStalledReturnsAtOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second))
	ctx := testutil.Context(t, 60*time.Second)
	m, err := groupmember.New(c, "/services/stalledstart", "a", nil)
	require.NoError(t, err)
	defer m.Close()
	proxy.Stall()
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := testutil.Go(sctx, m.Start)
	err = testutil.Result(t, start, 5*time.Second, "Start with a 300 ms context on a stalled connection")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, m.WaitForInitialCreate(ctx), groupmember.ErrClosed, "the member is closed once Start failed")
	assert.ErrorIs(t, m.SetThisData(ctx, []byte("x")), groupmember.ErrClosed)
	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.NoError(t, c.Sync(ctx, "/services/stalledstart"))
	testutil.RequireNoChildren(t, srv.ConnectString(), "/services/stalledstart")
	require.NoError(t, m.Close())
}
