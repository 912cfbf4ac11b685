package cache_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestTreeCacheEventsAtEachLevel(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 40*time.Second)
	const root = "/tree"
	create(t, c, root+"/a/b", "b")

	tc, err := cache.NewTreeCache(c, root)
	require.NoError(t, err)
	r := listen(t, newRecorder(root, true), tc.AddListener)
	require.NoError(t, tc.Start(ctx))
	defer tc.Close()
	r.expect(t, "NODE_ADDED /tree", "NODE_ADDED /tree/a", "NODE_ADDED /tree/a/b", "INITIALIZED")

	// Additions at each level, parent first.
	create(t, c, root+"/a/b/c/d", "d")
	r.expect(t, "NODE_ADDED /tree/a/b/c", "NODE_ADDED /tree/a/b/c/d")
	create(t, c, root+"/e", "e")
	r.expect(t, "NODE_ADDED /tree/e")

	// Updates at each level, with the old and new data.
	for _, p := range []string{root, root + "/a", root + "/a/b", root + "/a/b/c", root + "/a/b/c/d"} {
		set(t, c, p, "new "+p)
		ev := r.next(t, 10*time.Second)
		require.Equal(t, "NODE_UPDATED "+p, ev.String())
		require.Equal(t, "new "+p, string(ev.Data.Data))
		require.NotNil(t, ev.Old)
	}
	kids, ok := tc.Children(root + "/a/b")
	require.True(t, ok)
	require.Equal(t, []string{"c"}, keys(kids))
	require.Equal(t, "new /tree/a/b/c", string(kids["c"].Data))

	// Removal of a subtree: children first.
	del(t, c, root+"/a/b")
	r.expect(t, "NODE_REMOVED /tree/a/b/c/d", "NODE_REMOVED /tree/a/b/c", "NODE_REMOVED /tree/a/b")
	_, ok = tc.Get(root + "/a/b/c")
	require.False(t, ok)

	// A subtree deleted and created again in one transaction: removed, then added.
	_, err = c.Transaction(ctx,
		framework.DeleteOp(root+"/e", -1), framework.CreateOp(root+"/e", []byte("e"), framework.Persistent, nil),
		framework.CreateOp(root+"/e/f", nil, framework.Persistent, nil))
	require.NoError(t, err)
	r.expect(t, "NODE_REMOVED /tree/e", "NODE_ADDED /tree/e", "NODE_ADDED /tree/e/f")

	// The root goes and comes back.
	del(t, c, root)
	r.expect(t, "NODE_REMOVED /tree/a", "NODE_REMOVED /tree/e/f", "NODE_REMOVED /tree/e", "NODE_REMOVED /tree")
	require.Empty(t, tc.Snapshot())
	create(t, c, root+"/x", "x")
	r.expect(t, "NODE_ADDED /tree", "NODE_ADDED /tree/x")

	requireConverges(t, c, root, 1<<30, tc.Snapshot)
	r.checkConsistent(t)
	require.Empty(t, diff(r.snapshotModel(), tc.Snapshot()), "events replayed must give the cache's contents")
	r.noMore(t)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestTreeCacheMaxDepthAndSelector(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 40*time.Second)
	const root = "/depth"
	create(t, c, root+"/a/b/c", "")
	create(t, c, root+"/skip/x", "")
	create(t, c, root+"/flat/y", "")

	tc1, err := cache.NewTreeCache(c, root, cache.WithMaxDepth(1), cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	r1 := listen(t, newRecorder(root, true), tc1.AddListener)
	require.NoError(t, tc1.Start(ctx))
	defer tc1.Close()
	require.Equal(t, []string{"/depth", "/depth/a", "/depth/flat", "/depth/skip"}, keys(tc1.Snapshot()))
	r1.seed(values(tc1.Snapshot())...)

	tc0, err := cache.NewTreeCache(c, root, cache.WithMaxDepth(0), cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, tc0.Start(ctx))
	defer tc0.Close()
	require.Equal(t, []string{"/depth"}, keys(tc0.Snapshot()))

	sel := cache.SelectorFuncs{
		Accept:   func(p string) bool { return !strings.HasSuffix(p, "/skip") },
		Traverse: func(p string) bool { return p != root+"/flat" },
	}
	tcs, err := cache.NewTreeCache(c, root, cache.WithSelector(sel), cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, tcs.Start(ctx))
	defer tcs.Close()
	require.Equal(t, []string{"/depth", "/depth/a", "/depth/a/b", "/depth/a/b/c", "/depth/flat"}, keys(tcs.Snapshot()))

	// Changes below the depth limit are not reported; at the limit they are.
	create(t, c, root+"/a/b/new", "")
	set(t, c, root+"/a/b", "deep")
	create(t, c, root+"/n", "")
	r1.expect(t, "NODE_ADDED /depth/n")
	set(t, c, root+"/a", "1")
	r1.expect(t, "NODE_UPDATED /depth/a")
	require.Eventually(t, func() bool { _, ok := tcs.Get(root + "/a/b/new"); return ok }, 10*time.Second, 10*time.Millisecond)
	create(t, c, root+"/flat/z", "")
	create(t, c, root+"/skip/w", "")
	create(t, c, root+"/skip2", "")
	require.Eventually(t, func() bool { _, ok := tcs.Get(root + "/skip2"); return ok }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"/depth", "/depth/a", "/depth/a/b", "/depth/a/b/c", "/depth/a/b/new", "/depth/flat", "/depth/n", "/depth/skip2"}, keys(tcs.Snapshot()))
	requireConverges(t, c, root, 1, tc1.Snapshot)
	requireConverges(t, c, root, 0, tc0.Snapshot)
	r1.expect(t, "NODE_ADDED /depth/skip2")
	r1.checkConsistent(t)
	r1.noMore(t)
}

func values(m map[string]cache.ChildData) []cache.ChildData {
	var out []cache.ChildData
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestLargeTree caches 10 000 nodes and checks that the cache does not run a goroutine
// per node.
func TestLargeTree(t *testing.T) {
	if testing.Short() {
		t.Skip("large tree: skipped under -short")
	}
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 50*time.Second)
	const root = "/large"
	const fanout = 100 // 100 parents of 99 children each + 100 parents + root = 10 001
	create(t, c, root, "")
	var ops []framework.Op
	var last string // the path of the last op in ops
	flush := func() {
		if len(ops) > 0 {
			_, err := c.Transaction(ctx, ops...)
			if err != nil {
				// The client retries a transaction whose connection was lost (as Curator
				// does): when the first try was applied, the retry finds its nodes. A
				// transaction is all or nothing, and only this test writes here, so the
				// last node being there means it was applied.
				st, xerr := c.Exists(ctx, last)
				require.NoError(t, xerr)
				require.NotNil(t, st, "transaction failed and was not applied: %v", err)
				t.Logf("transaction applied by an earlier try: %v", err)
			}
			ops = ops[:0]
		}
	}
	for i := range fanout {
		parent := fmt.Sprintf("%s/p%03d", root, i)
		ops = append(ops, framework.CreateOp(parent, nil, framework.Persistent, nil))
		for j := range fanout - 1 {
			last = fmt.Sprintf("%s/c%03d", parent, j)
			ops = append(ops, framework.CreateOp(last, []byte("v"), framework.Persistent, nil))
		}
		if len(ops) >= 1000 {
			flush()
		}
	}
	flush()

	before := runtime.NumGoroutine()
	start := time.Now()
	tc, err := cache.NewTreeCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, tc.Start(ctx))
	defer tc.Close()
	t.Logf("built a cache of %d nodes in %v", len(tc.Snapshot()), time.Since(start))
	require.Len(t, tc.Snapshot(), 10001)
	extra := runtime.NumGoroutine() - before
	t.Logf("goroutines added by the cache: %d", extra)
	require.Less(t, extra, 200, "the cache must not run a goroutine per node")

	r := listen(t, newRecorder(root, true), tc.AddListener)
	set(t, c, root+"/p042/c017", "changed")
	r.expect(t, "NODE_UPDATED /large/p042/c017")
	d, _ := tc.Get(root + "/p042/c017")
	require.Equal(t, "changed", string(d.Data))
}

// A Selector gets full paths without the client's namespace (Selector: "Both methods get
// full paths (without the client's namespace)"), and a TreeCache of a namespaced client
// holds, prunes and watches by those paths: the accepted nodes are held, the refused one
// and everything below it are not, and the node whose children are not traversed is held
// without its children.
func TestTreeCacheSelectorSeesPathsWithoutNamespace(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString(), framework.WithNamespace("selns/deep"))
	ctx := testutil.Context(t, 30*time.Second)
	const root = "/r"
	for _, p := range []string{root, root + "/keep", root + "/keep/k", root + "/skip", root + "/skip/s", root + "/flat", root + "/flat/f"} {
		create(t, c, p, p)
	}
	var mu sync.Mutex
	var seen []string
	sel := cache.SelectorFuncs{
		Traverse: func(p string) bool {
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
			return p != root+"/flat"
		},
		Accept: func(p string) bool {
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
			return p != root+"/skip"
		},
	}
	tc, err := cache.NewTreeCache(c, root, cache.WithSelector(sel), cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, tc.Start(ctx))
	defer tc.Close()
	for _, p := range []string{root, root + "/keep", root + "/keep/k", root + "/flat"} {
		_, ok := tc.Get(p)
		assert.True(t, ok, "%s is held", p)
	}
	for _, p := range []string{root + "/skip", root + "/skip/s", root + "/flat/f"} {
		_, ok := tc.Get(p)
		assert.False(t, ok, "%s is not held", p)
	}
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	for _, p := range seen {
		assert.True(t, p == root || strings.HasPrefix(p, root+"/"), "the selector got %q, not a path without the namespace", p)
	}
}
