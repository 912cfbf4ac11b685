package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// childFields is the part of a Stat that a child created or deleted changes.
func childFields(st framework.Stat) string {
	return fmt.Sprintf("pzxid %d cversion %d numChildren %d", st.Pzxid, st.Cversion, st.NumChildren)
}

// requireStatFollows waits until the Stat get returns for p equals the server's.
func requireStatFollows(t *testing.T, c *framework.Client, p string, get func(string) (cache.ChildData, bool)) {
	t.Helper()
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, want, err := c.GetData(testutil.Context(t, 10*time.Second), p)
		require.NoError(t, err)
		d, ok := get(p)
		if ok && d.Stat == *want {
			return
		}
		last = fmt.Sprintf("cached (held %v) %s, server %s", ok, childFields(d.Stat), childFields(*want))
		if time.Now().After(deadline) {
			t.Fatalf("the cached Stat of %s does not follow its children: %s", p, last)
		}
		time.Sleep(20 * time.Millisecond) // polling the server, not synchronising goroutines
	}
}

// A cache that follows a node's children holds the node's Stat as the server has it: a
// child created or deleted changes the parent's pzxid, cversion and numChildren, and the
// cache's listing of the children brings them in.
func TestTreeCacheStatFollowsChildren(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const root = "/stat"
	create(t, c, root+"/a", "a")
	t.Cleanup(func() { _ = c.Delete(ctx, root, framework.WithChildren(), framework.Quietly()) })

	tc, err := cache.NewTreeCache(c, root)
	require.NoError(t, err)
	rt := listen(t, newRecorder(root, true), tc.AddListener)
	require.NoError(t, tc.Start(ctx))
	t.Cleanup(func() { _ = tc.Close() })
	cc, err := cache.NewCuratorCache(c, root)
	require.NoError(t, err)
	rc := listen(t, newRecorder(root, true), cc.AddListener)
	require.NoError(t, cc.Start(ctx))
	t.Cleanup(func() { _ = cc.Close() })
	rt.skipUntil(t, "INITIALIZED")
	rc.skipUntil(t, "INITIALIZED")

	create(t, c, root+"/b", "b")
	rt.skipUntil(t, "NODE_ADDED /stat/b")
	rc.skipUntil(t, "NODE_CREATED /stat/b")
	requireStatFollows(t, c, root, tc.Get)
	requireStatFollows(t, c, root, cc.Get)

	create(t, c, root+"/a/x", "x")
	rt.skipUntil(t, "NODE_ADDED /stat/a/x")
	rc.skipUntil(t, "NODE_CREATED /stat/a/x")
	requireStatFollows(t, c, root+"/a", tc.Get)
	requireStatFollows(t, c, root+"/a", cc.Get)

	del(t, c, root+"/b")
	rt.skipUntil(t, "NODE_REMOVED /stat/b")
	rc.skipUntil(t, "NODE_DELETED /stat/b")
	requireStatFollows(t, c, root, tc.Get)
	requireStatFollows(t, c, root, cc.Get)
	rt.checkConsistent(t)
	rc.checkConsistent(t)
}

// A NodeCache (as Curator's) sets no child watch: its Stat is the one read with the node's
// data, so it follows every change of the data, creation and deletion; a child created
// below the node shows in the Stat at the next such read.
func TestNodeCacheStatIsReadWithData(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const p = "/nodestat"
	create(t, c, p, "v0")
	t.Cleanup(func() { _ = c.Delete(ctx, p, framework.WithChildren(), framework.Quietly()) })

	nc, err := cache.NewNodeCache(c, p, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	r := listen(t, newRecorder(p, false), nc.AddListener)
	require.NoError(t, nc.Start(ctx))
	t.Cleanup(func() { _ = nc.Close() })
	d, ok := nc.Current()
	require.True(t, ok)
	r.seed(d)

	create(t, c, p+"/kid", "")
	set(t, c, p, "v1")
	ev := r.next(t, 15*time.Second)
	require.Equal(t, "NODE_CHANGED "+p, ev.String())
	_, want, err := c.GetData(ctx, p)
	require.NoError(t, err)
	require.Equal(t, *want, ev.Data.Stat, "the Stat read with the data")
	require.EqualValues(t, 1, ev.Data.Stat.NumChildren)
	d, ok = nc.Current()
	require.True(t, ok)
	require.Equal(t, *want, d.Stat)
	r.checkConsistent(t)
}
