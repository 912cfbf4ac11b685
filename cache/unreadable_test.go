package cache_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// untilInitialized returns the events up to Initialized (not included).
func untilInitialized(t *testing.T, r *recorder) []cache.Event {
	t.Helper()
	var evs []cache.Event
	for {
		ev := r.next(t, 20*time.Second)
		if ev.Type == cache.Initialized {
			return evs
		}
		evs = append(evs, ev)
	}
}

// A child the cache's client may not read (its ACL says so: NoAuth) does not go missing
// silently from the first build: Initialized comes once every child was read or reported
// Unreadable with its error, and the child is read once it can be.
func TestInitializedReportsUnreadableChild(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	owner := newClient(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	cc := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const root = "/unread"
	create(t, owner, root, "")
	create(t, owner, root+"/a", "a")
	_, err := owner.Create(ctx, root+"/b", []byte("b"), framework.WithNodeACL(zk.DigestACL(zk.PermAll, "owner", "pw")))
	require.NoError(t, err)
	create(t, owner, root+"/c", "c")
	t.Cleanup(func() { _ = owner.Delete(ctx, root, framework.WithChildren(), framework.Quietly()) })

	pc, err := cache.NewPathChildrenCache(cc, root, cache.WithStartMode(cache.PostInitializedEvent))
	require.NoError(t, err)
	rp := listen(t, newRecorder(root, false), pc.AddListener)
	tc, err := cache.NewTreeCache(cc, root)
	require.NoError(t, err)
	rt := listen(t, newRecorder(root, true), tc.AddListener)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { _ = pc.Close() })
	require.NoError(t, tc.Start(ctx))
	t.Cleanup(func() { _ = tc.Close() })

	for name, r := range map[string]*recorder{"path children cache": rp, "tree cache": rt} {
		evs := untilInitialized(t, r)
		var unreadable []cache.Event
		for _, ev := range evs {
			if ev.Type == cache.Unreadable {
				unreadable = append(unreadable, ev)
			}
		}
		require.Len(t, unreadable, 1, "%s: events before Initialized: %v", name, evs)
		require.NotNil(t, unreadable[0].Data)
		assert.Equal(t, root+"/b", unreadable[0].Data.Path, name)
		assert.True(t, errors.Is(unreadable[0].Err, framework.ErrNoAuth), "%s: %v", name, unreadable[0].Err)
	}
	_, ok := pc.Get(root + "/a")
	assert.True(t, ok)
	_, ok = pc.Get(root + "/c")
	assert.True(t, ok)
	_, ok = pc.Get(root + "/b")
	assert.False(t, ok)

	// Readable now; the next change of the parent's children makes the caches read it.
	_, err = owner.SetACL(ctx, root+"/b", zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	create(t, owner, root+"/d", "d")
	require.Eventually(t, func() bool {
		_, b := pc.Get(root + "/b")
		_, d := pc.Get(root + "/d")
		_, tb := tc.Get(root + "/b")
		return b && d && tb
	}, 15*time.Second, 10*time.Millisecond)
	rp.checkConsistent(t)
	rt.checkConsistent(t)
}

// A cached node deleted and created again in one transaction with an ACL that denies the
// cache's client is no longer held: its removal is reported (then Unreadable, where the
// cache sends it), not the old node kept for good.
func TestCacheDropsNodeReplacedByUnreadable(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	owner := newClient(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const root = "/replaced"
	create(t, owner, root+"/a", "a")
	create(t, owner, root+"/b", "b")
	t.Cleanup(func() { _ = owner.Delete(ctx, root, framework.WithChildren(), framework.Quietly()) })

	pc, err := cache.NewPathChildrenCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	rp := listen(t, newRecorder(root, false), pc.AddListener)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { _ = pc.Close() })
	rp.seed(pc.Current()...)
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

	_, err = owner.Transaction(ctx,
		framework.DeleteOp(root+"/a", -1),
		framework.CreateOp(root+"/a", []byte("secret"), framework.Persistent, zk.DigestACL(zk.PermAll, "owner", "pw")))
	require.NoError(t, err)

	rp.skipUntil(t, "CHILD_REMOVED "+root+"/a")
	ev := rp.next(t, 15*time.Second)
	require.Equal(t, cache.Unreadable, ev.Type, "after the removal: %v", ev)
	rt.skipUntil(t, "NODE_REMOVED "+root+"/a")
	ev = rt.next(t, 15*time.Second)
	require.Equal(t, cache.Unreadable, ev.Type, "after the removal: %v", ev)
	rc.skipUntil(t, "NODE_DELETED "+root+"/a")
	_, ok := pc.Get(root + "/a")
	assert.False(t, ok, "path children cache")
	_, ok = tc.Get(root + "/a")
	assert.False(t, ok, "tree cache")
	_, ok = cc.Get(root + "/a")
	assert.False(t, ok, "curator cache")
	rp.checkConsistent(t)
	rt.checkConsistent(t)
	rc.checkConsistent(t)
}

// A cache whose own node it may not read holds it once it is made again, readable (the
// server tells the cache's client of no change to a node it may not read: the cache
// reads it again on its own).
func TestCacheHoldsRootMadeReadable(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	owner := newClient(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const root = "/hidden"
	_, err := owner.Create(ctx, root, []byte("secret"), framework.WithNodeACL(zk.DigestACL(zk.PermAll, "owner", "pw")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = owner.Delete(ctx, root, framework.WithChildren(), framework.Quietly()) })

	nc, err := cache.NewNodeCache(c, root)
	require.NoError(t, err)
	rn := listen(t, newRecorder(root, false), nc.AddListener)
	require.NoError(t, nc.Start(ctx))
	t.Cleanup(func() { _ = nc.Close() })
	tc, err := cache.NewTreeCache(c, root)
	require.NoError(t, err)
	rt := listen(t, newRecorder(root, true), tc.AddListener)
	require.NoError(t, tc.Start(ctx))
	t.Cleanup(func() { _ = tc.Close() })
	for name, r := range map[string]*recorder{"node cache": rn, "tree cache": rt} {
		ev := r.next(t, 15*time.Second)
		require.Equal(t, cache.Unreadable, ev.Type, "%s: %v", name, ev)
	}

	_, err = owner.Transaction(ctx,
		framework.DeleteOp(root, -1),
		framework.CreateOp(root, []byte("open"), framework.Persistent, nil))
	require.NoError(t, err)
	rn.skipUntil(t, "NODE_CREATED "+root)
	rt.skipUntil(t, "NODE_ADDED "+root)
	d, ok := nc.Current()
	require.True(t, ok)
	require.Equal(t, "open", string(d.Data))
	rn.checkConsistent(t)
	rt.checkConsistent(t)
}

// A node the cache may not read, whose ACL is then opened (setACL: the server sends no
// event, and the parent's children do not change), is held once the cache reads it
// again on its own ("The cache reads such a node again every 10 seconds ... and holds
// it once it can read it"), for a child and for the cache's own node.
func TestCacheHoldsNodeWhoseACLIsOpened(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	owner := newClient(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const root = "/aclopened"
	secret := zk.DigestACL(zk.PermAll, "owner", "pw")
	create(t, owner, root, "")
	_, err := owner.Create(ctx, root+"/b", []byte("b"), framework.WithNodeACL(secret))
	require.NoError(t, err)
	_, err = owner.Create(ctx, "/aclopened-node", []byte("n"), framework.WithNodeACL(secret))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = owner.Delete(ctx, root, framework.WithChildren(), framework.Quietly())
		_ = owner.Delete(ctx, "/aclopened-node", framework.Quietly())
	})

	pc, err := cache.NewPathChildrenCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { _ = pc.Close() })
	tc, err := cache.NewTreeCache(c, root)
	require.NoError(t, err)
	rt := listen(t, newRecorder(root, true), tc.AddListener)
	require.NoError(t, tc.Start(ctx))
	t.Cleanup(func() { _ = tc.Close() })
	nc, err := cache.NewNodeCache(c, "/aclopened-node")
	require.NoError(t, err)
	rn := listen(t, newRecorder("/aclopened-node", false), nc.AddListener)
	require.NoError(t, nc.Start(ctx))
	t.Cleanup(func() { _ = nc.Close() })
	rt.skipUntil(t, "INITIALIZED")
	ev := rn.next(t, 15*time.Second)
	require.Equal(t, cache.Unreadable, ev.Type, "node cache: %v", ev)
	_, ok := pc.Get(root + "/b")
	require.False(t, ok)

	_, err = owner.SetACL(ctx, root+"/b", zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	_, err = owner.SetACL(ctx, "/aclopened-node", zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, b := pc.Get(root + "/b")
		_, tb := tc.Get(root + "/b")
		_, n := nc.Current()
		return b && tb && n
	}, 25*time.Second, 20*time.Millisecond, "the caches hold the nodes once readable")
	d, _ := nc.Current()
	assert.Equal(t, "n", string(d.Data))
	rt.checkConsistent(t)
	rn.checkConsistent(t)
}
