package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A cache's data watch shared with another recipe of the same client
// that waits on Done: both hear the change, once; the cache closed, the other recipe's
// next watch on the path still fires, and the cache is not told.
func TestCacheDataWatchSharedWithWaiter(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create(t, c, "/sh/x", "v")
	cc, err := cache.NewCuratorCache(c, "/sh")
	require.NoError(t, err)
	r := listen(t, newRecorder("/sh", true), cc.AddListener)
	require.NoError(t, cc.Start(ctx))
	r.skipUntil(t, "INITIALIZED")
	n := c.Watches()
	_, _, w, err := c.GetDataW(ctx, "/sh/x")
	require.NoError(t, err)
	require.Equal(t, n, c.Watches(), "the waiter shares the cache's watch")
	set(t, c, "/sh/x", "w1")
	testutil.WaitClosed(t, w.Done(), 10*time.Second, "the waiter's Done")
	r.expect(t, "NODE_CHANGED /sh/x")
	_, _, w2, err := c.GetDataW(ctx, "/sh/x")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.Watches() == n }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, cc.Close())
	set(t, c, "/sh/x", "w2")
	testutil.WaitClosed(t, w2.Done(), 10*time.Second, "the waiter's second Done")
	r.noMore(t)
}
