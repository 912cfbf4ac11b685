package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// An uncontended acquire+release costs the create, the listing sent behind it and the
// delete: the lease takes the listing's children watch instead of reading its node, so
// the release waits for no read. The listing is sent from a goroutine started by the
// create's send hook, which can (rarely, on a loaded machine) reach the connection before
// the create does: it then misses our node and the acquisition lists once more (4
// requests, safe). So the cost is counted over many cycles, with a bound that a lease
// reading its node at every cycle (4 per cycle) fails.
func TestUncontendedCycleReadsNoNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	m, err := mutex.New(c, "/locks/pipelined")
	require.NoError(t, err)
	ctx := context.Background()
	warm, err := m.Acquire(ctx) // makes the parent
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))
	const cycles = 12
	var total int64
	for i := range cycles {
		// The last cycle's watch, fired by its own delete, must be told first: until then
		// the client's registry may hand the next listing that same watch (which then
		// fires at once, and the lease reads its node: safe, but one request more).
		require.Eventually(t, func() bool { return c.Watches() == 0 }, 10*time.Second, time.Millisecond)
		before := c.Requests()
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		n := int64(c.Requests() - before)
		require.GreaterOrEqual(t, n, int64(3), "cycle %d: create, getChildren, delete at least", i)
		total += n
	}
	require.LessOrEqual(t, total, int64(3*cycles+cycles/2),
		"%d requests in %d cycles: create, getChildren, delete each (a listing overtaken by the create now and then adds one)", total, cycles)
}

// A node deleted by someone else while held through the listing's children watch ends the
// lease lost, and its release says so.
func TestPipelinedWatchSeesNodeDeleted(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	other := testutil.Connect(t, srv.ConnectString())
	m, err := mutex.New(c, "/locks/pipelined")
	require.NoError(t, err)
	ctx := context.Background()
	warm, err := m.Acquire(ctx) // makes the parent
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))
	require.Eventually(t, func() bool { return c.Watches() == 0 }, 10*time.Second, time.Millisecond)
	before := c.Requests()
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), int64(c.Requests()-before), "acquired with the listing's watch: no read of the node")
	require.NoError(t, other.Delete(ctx, l.Node()))
	testutil.WaitClosed(t, l.Done(), 10*time.Second, "Done after the node was deleted")
	require.ErrorIs(t, l.Release(ctx), mutex.ErrLeaseLost)
}
