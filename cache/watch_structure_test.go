package cache_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestCacheWatchStructure: a cache holds one client watch per node and kind
// (data, children), shared with another cache of the same client rather than doubled,
// and waits on them without a goroutine per some number of watches: the client tells the
// cache when one fires. Each cache hears a change once.
func TestCacheWatchStructure(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const root, parents, kids = "/ws", 20, 30
	ops := []framework.Op{framework.CreateOp(root, nil, framework.Persistent, nil)}
	for i := range parents {
		p := fmt.Sprintf("%s/p%02d", root, i)
		ops = append(ops, framework.CreateOp(p, nil, framework.Persistent, nil))
		for j := range kids {
			ops = append(ops, framework.CreateOp(fmt.Sprintf("%s/c%02d", p, j), []byte("v"), framework.Persistent, nil))
		}
	}
	_, err := c.Transaction(ctx, ops...)
	require.NoError(t, err)
	const nodes = 1 + parents*(1+kids)
	require.Zero(t, c.Watches())

	start := func() (*cache.CuratorCache, *recorder) {
		cc, err := cache.NewCuratorCache(c, root)
		require.NoError(t, err)
		r := listen(t, newRecorder(root, true), cc.AddListener)
		require.NoError(t, cc.Start(ctx))
		r.skipUntil(t, "INITIALIZED")
		return cc, r
	}
	before := runtime.NumGoroutine()
	cc1, r1 := start()
	extra := runtime.NumGoroutine() - before
	// The cache's own goroutine and its dispatcher's; before, also one per 256 watches.
	require.LessOrEqual(t, extra, 3, "goroutines the cache added for %d watches", 2*nodes)
	require.Equal(t, 2*nodes, c.Watches(), "one client watch per node and kind")

	cc2, r2 := start()
	require.Equal(t, 2*nodes, c.Watches(), "a second cache shares the client's watches")

	set(t, c, root+"/p07/c11", "changed")
	r1.expect(t, "NODE_CHANGED /ws/p07/c11")
	r2.expect(t, "NODE_CHANGED /ws/p07/c11")
	require.NoError(t, cc1.Close())
	set(t, c, root+"/p07/c12", "changed")
	r2.expect(t, "NODE_CHANGED /ws/p07/c12")
	require.NoError(t, cc2.Close())
	r1.noMore(t)
	r2.noMore(t)
}
