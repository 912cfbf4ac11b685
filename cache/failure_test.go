package cache_test

import (
	"context"
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

// offlineChanges changes the subtree at root in every way a cache must notice: a node
// created (with a child), one updated, one deleted, one deleted and created again with
// the same data and version, and a change in the path-children cache's view.
func offlineChanges(t *testing.T, c *framework.Client, root string) {
	ctx := testutil.Context(t, 20*time.Second)
	create(t, c, root+"/new/child", "born offline")
	set(t, c, root+"/upd", "updated offline")
	del(t, c, root+"/gone")
	_, err := c.Transaction(ctx, framework.DeleteOp(root+"/again", -1),
		framework.CreateOp(root+"/again", []byte("same"), framework.Persistent, nil))
	require.NoError(t, err)
}

func setupOffline(t *testing.T, c *framework.Client, root string) {
	create(t, c, root+"/upd", "before")
	create(t, c, root+"/gone/sub", "doomed")
	create(t, c, root+"/again", "same")
}

// startCaches starts a tree cache and a path-children cache on root through client c.
func startCaches(t *testing.T, c *framework.Client, root string) (*cache.TreeCache, *recorder, *cache.PathChildrenCache, *recorder) {
	ctx := testutil.Context(t, 20*time.Second)
	tc, err := cache.NewTreeCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	rt := listen(t, newRecorder(root, true), tc.AddListener)
	pc, err := cache.NewPathChildrenCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	rp := listen(t, newRecorder(root, false), pc.AddListener)
	require.NoError(t, tc.Start(ctx))
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { _ = tc.Close(); _ = pc.Close() })
	rt.seed(values(tc.Snapshot())...)
	rp.seed(pc.Current()...)
	return tc, rt, pc, rp
}

// checkOfflineReported checks that the offline changes were reported and the caches
// equal the server.
func checkOfflineReported(t *testing.T, cw *framework.Client, root string, tc *cache.TreeCache, rt *recorder, pc *cache.PathChildrenCache, rp *recorder) {
	requireConverges(t, cw, root, 1<<30, tc.Snapshot)
	require.Eventually(t, func() bool {
		return rt.seen("NODE_ADDED "+root+"/new/child") && rp.seen("CHILD_ADDED "+root+"/new")
	}, 10*time.Second, 10*time.Millisecond, "tree: %v\nchildren: %v", rt.all(), rp.all())
	for _, want := range []string{
		"NODE_ADDED " + root + "/new", "NODE_UPDATED " + root + "/upd",
		"NODE_REMOVED " + root + "/gone/sub", "NODE_REMOVED " + root + "/gone",
		"NODE_REMOVED " + root + "/again", "NODE_ADDED " + root + "/again",
	} {
		require.True(t, rt.seen(want), "tree cache did not report %q: %v", want, rt.all())
	}
	for _, want := range []string{
		"CHILD_UPDATED " + root + "/upd", "CHILD_REMOVED " + root + "/gone",
		"CHILD_REMOVED " + root + "/again", "CHILD_ADDED " + root + "/again",
	} {
		require.True(t, rp.seen(want), "path-children cache did not report %q: %v", want, rp.all())
	}
	rt.checkConsistent(t)
	rp.checkConsistent(t)
	require.Eventually(t, func() bool { return diff(rt.snapshotModel(), tc.Snapshot()) == "" }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		m := map[string]cache.ChildData{}
		for _, d := range pc.Current() {
			m[d.Path] = d
		}
		return diff(rp.snapshotModel(), m) == ""
	}, 10*time.Second, 10*time.Millisecond)
}

// TestChangesWhileDisconnected cuts the cache's client off (same session throughout),
// changes the tree from another client, and reconnects.
func TestChangesWhileDisconnected(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cc := newClient(t, proxy.ConnectString(), framework.WithSessionTimeout(6*time.Second))
	cw := newClient(t, srv.ConnectString())
	const root = "/offline"
	setupOffline(t, cw, root)
	tc, rt, pc, rp := startCaches(t, cc, root)
	sid := cc.SessionID()

	// Cut the connection: traffic stalls, existing connections drop, so the client
	// notices at once and reconnection attempts hang until Heal.
	proxy.Stall()
	proxy.DropConnections()
	rp.skipUntil(t, "CONNECTION_SUSPENDED")
	offlineChanges(t, cw, root)
	proxy.Heal()
	rp.skipUntil(t, "CONNECTION_RECONNECTED")
	rt.skipUntil(t, "CONNECTION_RECONNECTED")

	checkOfflineReported(t, cw, root, tc, rt, pc, rp)
	require.Equal(t, sid, cc.SessionID(), "the session should have survived")
	require.False(t, rp.seen("CONNECTION_LOST"))
}

// TestChangesAcrossSessionExpiry cuts the cache's client off until the server expires its
// session, changes the tree meanwhile, and reconnects: the cache gets a new session, sets
// its watches again and reports what changed.
func TestChangesAcrossSessionExpiry(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cc := newClient(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	cw := newClient(t, srv.ConnectString())
	const root = "/expiry"
	setupOffline(t, cw, root)
	tc, rt, pc, rp := startCaches(t, cc, root)
	sid := cc.SessionID()
	// An ephemeral node of the cache's session shows when the server expires it.
	_, err := cc.Create(testutil.Context(t, 10*time.Second), "/expiry-marker", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sid]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire the cache's session")
	offlineChanges(t, cw, root)
	proxy.Heal()
	rp.skipUntil(t, "CONNECTION_LOST")
	rp.skipUntil(t, "CONNECTION_RECONNECTED")
	rt.skipUntil(t, "CONNECTION_LOST")
	rt.skipUntil(t, "CONNECTION_RECONNECTED")
	require.NotEqual(t, sid, cc.SessionID(), "a new session")

	checkOfflineReported(t, cw, root, tc, rt, pc, rp)

	// The watches were set again on the new session: later changes are seen too.
	set(t, cw, root+"/upd", "after")
	create(t, cw, root+"/later", "")
	require.Eventually(t, func() bool {
		d, ok := tc.Get(root + "/upd")
		_, ok2 := pc.Get(root + "/later")
		return ok && string(d.Data) == "after" && ok2
	}, 10*time.Second, 10*time.Millisecond)
	requireConverges(t, cw, root, 1<<30, tc.Snapshot)
	rt.checkConsistent(t)
	rp.checkConsistent(t)
}

// On a connection that hangs (the proxy stalls before the cache's first read goes out),
// a Start under BuildInitialCache returns once its context ends, with an error wrapping
// ctx.Err() ("or with an error wrapping ctx.Err() — the cache is then closed"), and a
// Close made then returns without waiting for the hung server, leaving no goroutine
// ("Close stops the cache and waits for its goroutines").
func TestCacheStartAndCloseOnHungConnectionReturnWithContext(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := newClient(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	owner := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const root = "/hungstart"
	create(t, owner, root, "r")
	create(t, owner, root+"/a", "a")
	t.Cleanup(func() { _ = owner.Delete(ctx, root, framework.WithChildren(), framework.Quietly()) })
	type startCloser interface {
		Start(context.Context) error
		Close() error
	}
	mk := map[string]func() (startCloser, error){
		"node cache": func() (startCloser, error) {
			return cache.NewNodeCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
		},
		"path children cache": func() (startCloser, error) {
			return cache.NewPathChildrenCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
		},
		"tree cache": func() (startCloser, error) {
			return cache.NewTreeCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
		},
	}
	proxy.Stall()
	defer proxy.Heal()
	for name, newCache := range mk {
		cc, err := newCache()
		require.NoError(t, err, name)
		sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		start := time.Now()
		err = cc.Start(sctx)
		took := time.Since(start)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, name)
		assert.Less(t, took, 2*time.Second, "%s: Start returned %v after its context's deadline", name, took-300*time.Millisecond)
		closed := make(chan error, 1)
		go func() { closed <- cc.Close() }()
		select {
		case err := <-closed:
			assert.NoError(t, err, name)
		case <-time.After(5 * time.Second):
			proxy.Heal()
			<-closed
			t.Fatalf("%s: Close waited on the hung connection for more than 5 s", name)
		}
	}
	// A CuratorCache's Start returns at once ("ctx bounds nothing after Start returns"):
	// its Close alone is bounded here.
	cc, err := cache.NewCuratorCache(c, root)
	require.NoError(t, err)
	require.NoError(t, cc.Start(ctx))
	time.Sleep(200 * time.Millisecond) // its first read is sent on the hung connection
	closed := make(chan error, 1)
	go func() { closed <- cc.Close() }()
	select {
	case err := <-closed:
		assert.NoError(t, err, "curator cache")
	case <-time.After(5 * time.Second):
		proxy.Heal()
		<-closed
		t.Fatal("curator cache: Close waited on the hung connection for more than 5 s")
	}
}
