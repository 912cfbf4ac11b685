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
// whose data it then changes (the server tells the cache's data watch nothing, and drops
// it): the doc says the node is held as last read until a reconnection reads it again,
// and then reported removed and not held.
func TestCacheHeldChildMadeUnreadableThenChangedIsNotKept(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	owner := newClient(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	c := newClient(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()), framework.WithSessionTimeout(10*time.Second))
	states := testutil.States(c)
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
	// A child created after the change: once both caches hold it, any event for a
	// would have come (one session's watch events arrive in order).
	create(t, owner, root+"/b", "b")
	require.Eventually(t, func() bool {
		_, pok := pc.Get(root + "/b")
		_, tok := tc.Get(root + "/b")
		return pok && tok
	}, 20*time.Second, 20*time.Millisecond)
	pd, pok := pc.Get(root + "/a")
	td, tok := tc.Get(root + "/a")
	require.True(t, pok && tok, "held as last read")
	require.Equal(t, "v1", string(pd.Data), "held as last read")
	require.Equal(t, "v1", string(td.Data), "held as last read")

	// A reconnection reads every held node again: a is denied, reported removed.
	proxy.DropConnections()
	testutil.WaitState(t, states, framework.Reconnected, 20*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, pok := pc.Get(root + "/a")
		_, tok := tc.Get(root + "/a")
		if !pok && !tok {
			require.True(t, rp.seen("CHILD_REMOVED "+root+"/a"), "events %v", rp.all())
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	pd, pok = pc.Get(root + "/a")
	td, tok = tc.Get(root + "/a")
	t.Fatalf("after a reconnection %s/a (unreadable, changed to v2) is still held: the path-children cache holds %v %q, the tree cache %v %q (events %v)",
		root, pok, pd.Data, tok, td.Data, rp.all())
}

// A NodeCache's node made unreadable, then deleted and made again (readable, new data) by
// another client: the server tells the cache's data watch nothing of the deletion (the
// node was unreadable then), so the doc says the cache holds the old node until a
// reconnection, which reads it again and brings in the new one.
func TestNodeCacheRootMadeUnreadableThenReplacedIsNotKept(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	owner := newClient(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	c := newClient(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()), framework.WithSessionTimeout(10*time.Second))
	states := testutil.States(c)
	ctx := testutil.Context(t, 90*time.Second)
	const p, sync = "/heldunread-node", "/heldunread-sync"
	create(t, owner, p, "v1")
	create(t, owner, sync, "s0")
	t.Cleanup(func() {
		_ = owner.Delete(ctx, p, framework.Quietly())
		_ = owner.Delete(ctx, sync, framework.Quietly())
	})
	nc, err := cache.NewNodeCache(c, p, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, nc.Start(ctx))
	t.Cleanup(func() { _ = nc.Close() })
	rn := listen(t, newRecorder(p, false), nc.AddListener)
	sc, err := cache.NewNodeCache(c, sync, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { _ = sc.Close() })
	d, ok := nc.Current()
	require.True(t, ok)
	require.Equal(t, "v1", string(d.Data))

	_, err = owner.SetACL(ctx, p, zk.DigestACL(zk.PermAll, "owner", "pw"), -1)
	require.NoError(t, err)
	del(t, owner, p)
	create(t, owner, p, "v2")
	// A change the other cache sees after those: any event for p would have come.
	set(t, owner, sync, "s1")
	require.Eventually(t, func() bool { d, _ := sc.Current(); return string(d.Data) == "s1" }, 20*time.Second, 20*time.Millisecond)
	d, ok = nc.Current()
	require.True(t, ok, "held as last read")
	require.Equal(t, "v1", string(d.Data), "held as last read")

	proxy.DropConnections()
	testutil.WaitState(t, states, framework.Reconnected, 20*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if d, ok := nc.Current(); ok && string(d.Data) == "v2" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	d, ok = nc.Current()
	t.Fatalf("after a reconnection %s (made unreadable, deleted and made again with v2) is held as %v %q czxid %d (events %v)", p, ok, d.Data, d.Stat.Czxid, rn.all())
}
