package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// As TestPipelinedNodeDeletedAndMadeAgainEndsLost, for a semaphore lease (which takes
// its wait's children watch at any acquisition, a first one too).
func TestPipelinedSemaphoreNodeDeletedAndMadeAgainEndsLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	s, err := semaphore.New(c, "/pipelined/semreuse", 2)
	require.NoError(t, err)
	ctx := testutil.Context(t, 60*time.Second)
	// Until the lease holds through its wait's children watch (it did not read its node).
	var l *semaphore.Lease
	for i := 0; ; i++ {
		require.Less(t, i, 20, "the lease never held through the listing's children watch")
		l, err = s.Acquire(ctx)
		require.NoError(t, err)
		time.Sleep(200 * time.Millisecond)
		if testutil.ZKWatchers(t, c, l.Node()).Data == 0 && testutil.ZKWatchers(t, c, "/pipelined/semreuse/leases").Children == 1 {
			break
		}
		require.NoError(t, l.Release(ctx))
		require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	}
	_, err = admin.Transaction(ctx,
		framework.DeleteOp(l.Node(), -1),
		framework.CreateOp(l.Node(), []byte("someone else's"), framework.Ephemeral, nil))
	require.NoError(t, err)
	testutil.WaitClosed(t, l.Done(), 10*time.Second, "Done after the semaphore lease's node was deleted (a node of its name made again by another session)")
	require.ErrorIs(t, l.Release(ctx), semaphore.ErrLeaseLost)
}
