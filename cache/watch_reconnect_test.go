package cache_test

import (
	"context"
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

// The cache's watches over a reconnection: changes made while the cache's
// connection is down (a node deleted and created again, data changed, a child added, a
// node deleted) reach the cache after the reconnection (go-zookeeper's set-watches and
// the cache's own re-read), and the cache then holds exactly one client watch per node and
// kind: none lost, none doubled.
func TestCacheWatchesChangesAcrossReconnection(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := newClient(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(10*time.Second), framework.WithRetryPolicy(testutil.FastRetry(t)))
	other := newClient(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range []string{"/dr/a/x", "/dr/b", "/dr/c"} {
		create(t, other, p, "v")
	}
	cc, err := cache.NewCuratorCache(c, "/dr")
	require.NoError(t, err)
	r := listen(t, newRecorder("/dr", true), cc.AddListener)
	require.NoError(t, cc.Start(ctx))
	r.skipUntil(t, "INITIALIZED")
	require.Equal(t, 10, c.Watches(), "5 nodes, 2 kinds")
	states := testutil.States(c)
	snap := func() map[string]cache.ChildData {
		m := map[string]cache.ChildData{}
		for d := range cc.All() {
			m[d.Path] = d
		}
		return m
	}

	for round := range 3 {
		proxy.Stall()
		testutil.WaitState(t, states, framework.Suspended, 20*time.Second)
		_, err = other.Transaction(ctx,
			framework.DeleteOp("/dr/a/x", -1),
			framework.DeleteOp("/dr/a", -1),
			framework.CreateOp("/dr/a", []byte("again"), framework.Persistent, nil),
			framework.CreateOp("/dr/a/x", []byte("again"), framework.Persistent, nil),
			framework.SetDataOp("/dr/b", []byte{byte(round)}, -1),
			framework.CreateOp("/dr/b/k", nil, framework.Persistent, nil),
			framework.DeleteOp("/dr/c", -1),
		)
		require.NoError(t, err)
		proxy.Heal()
		testutil.WaitState(t, states, framework.Reconnected, 20*time.Second)
		requireConverges(t, other, "/dr", 1<<30, snap)
		watched(t, c, snap, "round %d after the reconnection", round)
		// Every node is watched: a change to each is heard.
		set(t, other, "/dr/a/x", "after")
		set(t, other, "/dr/b/k", "after")
		requireConverges(t, other, "/dr", 1<<30, snap)
		watched(t, c, snap, "round %d after the changes", round)
		// Back to the start for the next round.
		_, err = other.Transaction(ctx,
			framework.DeleteOp("/dr/b/k", -1),
			framework.CreateOp("/dr/c", []byte("v"), framework.Persistent, nil),
		)
		require.NoError(t, err)
		requireConverges(t, other, "/dr", 1<<30, snap)
		watched(t, c, snap, "round %d reset", round)
		r.checkConsistent(t)
	}
	require.NoError(t, cc.Close())
}

// watched checks that every cached node has one data and one children watch in
// go-zookeeper, and that the client's registry holds those and no more.
func watched(t *testing.T, c *framework.Client, snap func() map[string]cache.ChildData, msg string, args ...any) {
	t.Helper()
	var last string
	ok := func() bool {
		nodes := snap()
		for p := range nodes {
			if w := testutil.ZKWatchers(t, c, p); w != (testutil.Watchers{Data: 1, Children: 1}) {
				last = fmt.Sprintf("%s: %+v", p, w)
				return false
			}
		}
		if c.Watches() != 2*len(nodes) {
			last = fmt.Sprintf("%d watches for %d nodes", c.Watches(), len(nodes))
			return false
		}
		return true
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", fmt.Sprintf(msg, args...), last)
		}
		time.Sleep(10 * time.Millisecond) // polling go-zookeeper's map, not synchronising goroutines
	}
}
