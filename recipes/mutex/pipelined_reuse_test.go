package mutex_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// Someone else deletes the holder's node and makes a node of the same name again (one
// multi: an admin tool restoring nodes, say; now another session's), while the lease is
// held through the listing's children watch (the hint path). The node the lease held is
// gone: the lease must end lost (as it does with a data watch on its node, which sees
// NodeDeleted), its release must say so, and must not delete the other session's node.
// The children watch only says "the children changed", and the lease's read that follows
// finds a node at its path.
func TestPipelinedNodeDeletedAndMadeAgainEndsLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	var mu sync.Mutex
	var ops []string
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		mu.Lock()
		ops = append(ops, op)
		mu.Unlock()
	}))
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/pipelined/reuse"
	m := newMutex(t, c, path)
	warmPipe(t, c, m)
	ctx := testutil.Context(t, 60*time.Second)
	// The listing sent behind the create is now and then not usable (sent again): the
	// lease then reads its node. Acquire again until the lease took the listing's watch.
	var l *mutex.Lease
	for i := 0; ; i++ {
		require.Less(t, i, 20, "never on the hint path")
		require.Eventually(t, func() bool { return c.Watches() == 0 }, 10*time.Second, time.Millisecond)
		mu.Lock()
		ops = nil
		mu.Unlock()
		var err error
		l, err = m.Acquire(ctx)
		require.NoError(t, err)
		mu.Lock()
		hint := slices.Equal(ops, []string{"create", "getChildren"})
		mu.Unlock()
		if hint {
			break
		}
		require.NoError(t, l.Release(ctx))
	}
	// The lease's watch is armed (the listing's children watch, taken over).
	require.Eventually(t, func() bool { return c.Watches() == 1 }, 10*time.Second, time.Millisecond)
	_, err := admin.Transaction(ctx,
		framework.DeleteOp(l.Node(), -1),
		framework.CreateOp(l.Node(), []byte("someone else's"), framework.Ephemeral, nil))
	require.NoError(t, err)
	testutil.WaitClosed(t, l.Done(), 10*time.Second, "Done after the holder's node was deleted (and a node of its name made again by another session)")
	require.ErrorIs(t, l.Release(ctx), mutex.ErrLeaseLost)
	st, err := admin.Exists(ctx, l.Node())
	require.NoError(t, err)
	require.NotNil(t, st, "the release deleted another session's node")
}
