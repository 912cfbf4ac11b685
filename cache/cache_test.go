package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestBadArguments(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:2181") // never started: constructors do no I/O
	require.NoError(t, err)

	_, err = cache.NewNodeCache(nil, "/a")
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = cache.NewPathChildrenCache(nil, "/a")
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = cache.NewTreeCache(nil, "/a")
	require.ErrorIs(t, err, framework.ErrInvalidArgument)

	for _, p := range []string{"", "a", "/a/", "/a//b", "/a/../b", "/a\x00"} {
		_, err = cache.NewNodeCache(c, p)
		require.ErrorIs(t, err, framework.ErrInvalidPath, "path %q", p)
		_, err = cache.NewPathChildrenCache(c, p)
		require.ErrorIs(t, err, framework.ErrInvalidPath, "path %q", p)
		_, err = cache.NewTreeCache(c, p)
		require.ErrorIs(t, err, framework.ErrInvalidPath, "path %q", p)
	}

	_, err = cache.NewTreeCache(c, "/a", cache.WithMaxDepth(-1))
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
	require.ErrorContains(t, err, "negative")
	_, err = cache.NewTreeCache(c, "/a", cache.WithSelector(nil))
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = cache.NewPathChildrenCache(c, "/a", cache.WithStartMode(cache.StartMode(42)))
	require.ErrorIs(t, err, framework.ErrInvalidArgument)

	tc, err := cache.NewTreeCache(c, "/", cache.WithMaxDepth(0), nil)
	require.NoError(t, err)
	require.Equal(t, "/", tc.Path())
	require.NoError(t, tc.Close()) // Close before Start is fine
	require.ErrorIs(t, tc.Start(context.Background()), cache.ErrClosed)
}

func TestLifecycle(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)

	pc, err := cache.NewPathChildrenCache(c, "/life")
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	require.ErrorIs(t, pc.Start(ctx), cache.ErrAlreadyStarted)
	create(t, c, "/life/a", "1")
	require.Eventually(t, func() bool { _, ok := pc.Get("/life/a"); return ok }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, pc.Close())
	require.NoError(t, pc.Close())
	require.ErrorIs(t, pc.Start(ctx), cache.ErrClosed)
	require.Empty(t, pc.Current(), "a closed cache is empty")
	called := make(chan struct{}, 1)
	pc.AddListener(func(cache.Event) { called <- struct{}{} })()

	// Building the initial cache while the server cannot be reached: Start gives up with
	// the context's error, and the cache is closed.
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cp := newClient(t, proxy.ConnectString())
	proxy.Stall()
	defer proxy.Heal()
	nc, err := cache.NewNodeCache(cp, "/life", cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = nc.Start(sctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, nc.Start(ctx), cache.ErrClosed)
	require.NoError(t, nc.Close())
	select {
	case <-called:
		t.Fatal("listener added after Close was called")
	default:
	}
}

func TestNodeCache(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const p = "/node/x"

	nc, err := cache.NewNodeCache(c, p, cache.WithStartMode(cache.PostInitializedEvent))
	require.NoError(t, err)
	r := listen(t, newRecorder(p, false), nc.AddListener)
	require.NoError(t, nc.Start(ctx))
	defer nc.Close()
	r.expect(t, "INITIALIZED") // the node does not exist yet
	_, ok := nc.Current()
	require.False(t, ok)

	create(t, c, p, "one")
	r.expect(t, "NODE_CREATED "+p)
	d, ok := nc.Current()
	require.True(t, ok)
	require.Equal(t, "one", string(d.Data))

	set(t, c, p, "two")
	ev := r.next(t, 10*time.Second)
	require.Equal(t, cache.NodeChanged, ev.Type)
	require.Equal(t, "two", string(ev.Data.Data))
	require.Equal(t, "one", string(ev.Old.Data))

	create(t, c, p+"/child", "") // a child changes the Stat, not the data: no event
	set(t, c, p, "three")
	r.expect(t, "NODE_CHANGED "+p)
	d, _ = nc.Current()
	require.EqualValues(t, 1, d.Stat.NumChildren)

	del(t, c, p)
	r.expect(t, "NODE_DELETED "+p)
	_, ok = nc.Current()
	require.False(t, ok)

	create(t, c, p, "again")
	r.expect(t, "NODE_CREATED "+p)

	// Deleted and created again in one transaction, same data and version: the new czxid
	// shows it, reported as deleted then created.
	old, _ := nc.Current()
	_, err = c.Transaction(ctx, framework.DeleteOp(p, -1), framework.CreateOp(p, []byte("again"), framework.Persistent, nil))
	require.NoError(t, err)
	r.expect(t, "NODE_DELETED "+p, "NODE_CREATED "+p)
	d, _ = nc.Current()
	require.Greater(t, d.Stat.Czxid, old.Stat.Czxid)
	require.Equal(t, old.Stat.Version, d.Stat.Version)
	r.checkConsistent(t)
	requireConverges(t, c, p, 0, func() map[string]cache.ChildData {
		d, ok := nc.Current()
		if !ok {
			return map[string]cache.ChildData{}
		}
		return map[string]cache.ChildData{p: d}
	})
	r.noMore(t)
}

func TestPathChildrenCache(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 40*time.Second)
	const p = "/pc"
	create(t, c, p+"/a", "A")
	create(t, c, p+"/b", "B")

	// BuildInitialCache: Start returns with the children in; no events for them.
	pc, err := cache.NewPathChildrenCache(c, p, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	r := listen(t, newRecorder(p, false), pc.AddListener)
	require.NoError(t, pc.Start(ctx))
	defer pc.Close()
	cur := pc.Current()
	r.seed(cur...)
	require.Len(t, cur, 2)
	require.Equal(t, p+"/a", cur[0].Path)
	require.Equal(t, "B", string(cur[1].Data))
	_, ok := pc.Get(p)
	require.False(t, ok, "the parent is not a child")

	// PostInitializedEvent: the children are reported, then Initialized.
	pc2, err := cache.NewPathChildrenCache(c, p, cache.WithStartMode(cache.PostInitializedEvent), cache.WithCacheData(false))
	require.NoError(t, err)
	r2 := listen(t, newRecorder(p, false), pc2.AddListener)
	require.NoError(t, pc2.Start(ctx))
	defer pc2.Close()
	r2.expect(t, "CHILD_ADDED "+p+"/a", "CHILD_ADDED "+p+"/b", "INITIALIZED")
	d, ok := pc2.Get(p + "/a")
	require.True(t, ok)
	require.Nil(t, d.Data, "stats only")

	create(t, c, p+"/c", "C")
	r.expect(t, "CHILD_ADDED "+p+"/c")
	set(t, c, p+"/a", "A2")
	ev := r.next(t, 10*time.Second)
	require.Equal(t, "CHILD_UPDATED "+p+"/a", ev.String())
	require.Equal(t, "A2", string(ev.Data.Data))
	require.Equal(t, "A", string(ev.Old.Data))
	create(t, c, p+"/a/grandchild", "") // not followed
	del(t, c, p+"/b")
	r.expect(t, "CHILD_REMOVED "+p+"/b")

	// The parent goes: every child is removed; it comes back: the cache follows it again.
	del(t, c, p)
	r.expect(t, "CHILD_REMOVED "+p+"/a", "CHILD_REMOVED "+p+"/c")
	require.Empty(t, pc.Current())
	create(t, c, p+"/z", "Z")
	r.expect(t, "CHILD_ADDED "+p+"/z")

	r2.expect(t, "CHILD_ADDED "+p+"/c", "CHILD_UPDATED "+p+"/a", "CHILD_REMOVED "+p+"/b",
		"CHILD_REMOVED "+p+"/a", "CHILD_REMOVED "+p+"/c", "CHILD_ADDED "+p+"/z")
	d, _ = pc2.Get(p + "/z")
	require.Nil(t, d.Data)
	r.checkConsistent(t)
	r2.checkConsistent(t)
	r.noMore(t)
	r2.noMore(t)
}

func TestPathChildrenCacheNormalStartOnMissingParent(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const p = "/later/parent"
	pc, err := cache.NewPathChildrenCache(c, p)
	require.NoError(t, err)
	r := listen(t, newRecorder(p, false), pc.AddListener)
	require.NoError(t, pc.Start(ctx))
	defer pc.Close()
	create(t, c, p, "")
	create(t, c, p+"/1", "x")
	r.expect(t, "CHILD_ADDED "+p+"/1")
}

func TestNamespace(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString(), framework.WithNamespace("ns"))
	ctx := testutil.Context(t, 30*time.Second)
	tc, err := cache.NewTreeCache(c, "/")
	require.NoError(t, err)
	r := listen(t, newRecorder("/", true), tc.AddListener)
	require.NoError(t, tc.Start(ctx))
	defer tc.Close()
	create(t, c, "/a", "x") // the namespace node /ns is created with it
	r.skipUntil(t, "NODE_ADDED /a")
	d, ok := tc.Get("/a")
	require.True(t, ok)
	require.Equal(t, "x", string(d.Data))
	requireConverges(t, c, "/", 1<<30, tc.Snapshot)
	r.checkConsistent(t)
}
