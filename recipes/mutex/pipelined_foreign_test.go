package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// Someone else deletes the holder's node and makes a node of the same name again, now
// another session's (one multi), after the lease's data watch on its node was armed (a
// first acquisition: no listing watch). The lease sees NodeDeleted and ends lost; its
// release must then not delete the node at its path: that node is not this instance's
// (another session owns it, its czxid is not the one this acquisition created).
func TestPipelinedLostReleaseSparesOtherSessionsNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/pipelined/spare"
	m := newMutex(t, c, path)
	ctx := testutil.Context(t, 60*time.Second)
	l, err := m.Acquire(ctx) // a first acquisition: the lease reads its node (a data watch)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return testutil.ZKWatchers(t, c, l.Node()).Data == 1 }, 10*time.Second, time.Millisecond,
		"the lease's data watch on its node was never armed")
	_, err = admin.Transaction(ctx,
		framework.DeleteOp(l.Node(), -1),
		framework.CreateOp(l.Node(), []byte("someone else's"), framework.Ephemeral, nil))
	require.NoError(t, err)
	testutil.WaitClosed(t, l.Done(), 10*time.Second, "Done after the holder's node was deleted")
	require.ErrorIs(t, l.Release(ctx), mutex.ErrLeaseLost)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	st, err := admin.Exists(ctx, l.Node())
	require.NoError(t, err)
	require.NotNil(t, st, "the release of a lost lease deleted another session's node (same name, not this instance's)")
}
