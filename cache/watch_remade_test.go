package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// A node deleted and created again at the same path in one
// transaction (its data and children watches fire together, the parent's children watch
// too) is reported gone and back, and the new node is watched: its next change, and a new
// child, are heard; the cache holds one client watch per node and kind afterwards.
func TestCacheWatchesNodeRemadeInOneTransaction(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	create(t, c, "/rr/c/g", "g")
	set(t, c, "/rr/c", "c")
	cc, err := cache.NewCuratorCache(c, "/rr")
	require.NoError(t, err)
	r := listen(t, newRecorder("/rr", true), cc.AddListener)
	require.NoError(t, cc.Start(ctx))
	r.skipUntil(t, "INITIALIZED")
	require.Equal(t, 6, c.Watches(), "data and children watches of 3 nodes")

	for round := range 5 {
		_, err = c.Transaction(ctx,
			framework.DeleteOp("/rr/c/g", -1),
			framework.DeleteOp("/rr/c", -1),
			framework.CreateOp("/rr/c", []byte("again"), framework.Persistent, nil),
		)
		require.NoError(t, err)
		r.expect(t, "NODE_DELETED /rr/c/g", "NODE_DELETED /rr/c", "NODE_CREATED /rr/c")
		set(t, c, "/rr/c", "changed")
		r.expect(t, "NODE_CHANGED /rr/c")
		create(t, c, "/rr/c/g", "g")
		r.expect(t, "NODE_CREATED /rr/c/g")
		require.Eventually(t, func() bool { return c.Watches() == 6 }, 10*time.Second, 10*time.Millisecond,
			"round %d: one client watch per node and kind (have %d)", round, c.Watches())
		r.checkConsistent(t)
	}
	require.NoError(t, cc.Close())
	r.noMore(t)
}

// A NodeCache's exists watch on a missing node hears it
// created; deleted again, the cache arms a new exists watch and hears it created again,
// round after round, with no watch left over beyond the node's own.
func TestNodeCacheExistsWatchRearmsAfterEachDelete(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	create(t, c, "/rn", "")
	nc, err := cache.NewNodeCache(c, "/rn/x")
	require.NoError(t, err)
	got := make(chan string, 100)
	remove := nc.AddListener(func(ev cache.Event) {
		_, ok := nc.Current()
		if ok {
			got <- "present"
		} else {
			got <- "absent"
		}
	})
	defer remove()
	require.NoError(t, nc.Start(ctx))
	wait := func(want string) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case s := <-got:
				if s == want {
					return
				}
			case <-deadline:
				t.Fatalf("the node cache did not report the node %s", want)
			}
		}
	}
	require.Eventually(t, func() bool { return c.Watches() == 1 }, 10*time.Second, 10*time.Millisecond)
	for round := range 5 {
		create(t, c, "/rn/x", "v")
		wait("present")
		set(t, c, "/rn/x", "w")
		wait("present")
		del(t, c, "/rn/x")
		wait("absent")
		require.Eventually(t, func() bool { return c.Watches() == 1 }, 10*time.Second, 10*time.Millisecond,
			"round %d: only the exists watch (have %d)", round, c.Watches())
	}
	require.NoError(t, nc.Close())
}
