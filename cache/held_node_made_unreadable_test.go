package cache_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A node the cache holds whose ACL another client narrows (setACL fires no watch) and
// whose data it then changes is a cached node that can no longer be read: the doc says
// it is reported removed (then Unreadable) and not held. The cache must not keep
// serving the old data as current for good.
func TestCacheHeldChildMadeUnreadableThenChangedIsNotKept(t *testing.T) {
	srv := zktest.NewServer(t)
	owner := newClient(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const root = "/heldunread"
	create(t, owner, root, "")
	create(t, owner, root+"/a", "v1")
	t.Cleanup(func() { _ = owner.Delete(ctx, root, framework.WithChildren(), framework.Quietly()) })

	pc, err := cache.NewPathChildrenCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { _ = pc.Close() })
	rp := listen(t, newRecorder(root, false), pc.AddListener)
	tc, err := cache.NewTreeCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, tc.Start(ctx))
	t.Cleanup(func() { _ = tc.Close() })
	d, ok := pc.Get(root + "/a")
	require.True(t, ok)
	require.Equal(t, "v1", string(d.Data))

	_, err = owner.SetACL(ctx, root+"/a", zk.DigestACL(zk.PermAll, "owner", "pw"), -1)
	require.NoError(t, err)
	set(t, owner, root+"/a", "v2")

	// 25 s: two and a half of the cache's 10 s rechecks.
	deadline := time.Now().Add(25 * time.Second)
	for time.Now().Before(deadline) {
		pd, pok := pc.Get(root + "/a")
		td, tok := tc.Get(root + "/a")
		if (!pok || string(pd.Data) != "v1") && (!tok || string(td.Data) != "v1") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	pd, pok := pc.Get(root + "/a")
	td, tok := tc.Get(root + "/a")
	t.Fatalf("25 s after %s/a was made unreadable and changed to v2, the path-children cache holds %v %q, the tree cache %v %q (events %v)",
		root, pok, pd.Data, tok, td.Data, rp.all())
}

// A NodeCache's node made unreadable, then deleted and made again (readable, new data) by
// another client: the cache must end up with the new node (or at least not the old one).
func TestNodeCacheRootMadeUnreadableThenReplacedIsNotKept(t *testing.T) {
	srv := zktest.NewServer(t)
	owner := newClient(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const p = "/heldunread-node"
	create(t, owner, p, "v1")
	t.Cleanup(func() { _ = owner.Delete(ctx, p, framework.Quietly()) })
	nc, err := cache.NewNodeCache(c, p, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, nc.Start(ctx))
	t.Cleanup(func() { _ = nc.Close() })
	rn := listen(t, newRecorder(p, false), nc.AddListener)
	d, ok := nc.Current()
	require.True(t, ok)
	require.Equal(t, "v1", string(d.Data))

	_, err = owner.SetACL(ctx, p, zk.DigestACL(zk.PermAll, "owner", "pw"), -1)
	require.NoError(t, err)
	del(t, owner, p)
	create(t, owner, p, "v2")
	deadline := time.Now().Add(25 * time.Second)
	for time.Now().Before(deadline) {
		if d, ok := nc.Current(); !ok || string(d.Data) != "v1" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	d, ok = nc.Current()
	t.Fatalf("25 s after %s was made unreadable, deleted and made again with v2, the node cache holds %v %q czxid %d (events %v)", p, ok, d.Data, d.Stat.Czxid, rn.all())
}
