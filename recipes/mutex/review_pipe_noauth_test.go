package mutex_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// warmPipe makes m's next acquisition take the listing's children watch (the hint: the
// last listing showed nobody else), and waits until the warm cycle's watches are told.
func warmPipe(t *testing.T, c *framework.Client, m *mutex.Mutex) {
	t.Helper()
	ctx := testutil.Context(t, 30*time.Second)
	for range 2 {
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		require.Eventually(t, func() bool { return c.Watches() == 0 }, 10*time.Second, time.Millisecond)
	}
}

// An acquisition on the hint path whose create fails (the parent's ACL no longer lets
// this client create) made no node, yet the listing sent behind its create set a
// children watch on the parent: nothing of the failed acquisition may be left, and no
// change of the children may ever come to fire it.
func TestReviewPipeFailedCreateLeavesNoChildrenWatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/review/pipe/noauth"
	m := newMutex(t, c, path)
	warmPipe(t, c, m)
	ctx := testutil.Context(t, 30*time.Second)
	_, err := admin.SetACL(ctx, path, zk.WorldACL(zk.PermAll&^zk.PermCreate), -1)
	require.NoError(t, err)
	_, err = m.Acquire(ctx)
	require.Error(t, err, "the create must fail: no CREATE permission")
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	time.Sleep(200 * time.Millisecond) // let any late reply come
	require.Equal(t, 0, c.Watches(), "a failed acquisition left a watch set in the client's registry")
	require.Equal(t, 0, testutil.ZKWatchers(t, c, path).Children, "a failed acquisition left a children watch on %s", path)
}
