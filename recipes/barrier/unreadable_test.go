package barrier_test

import (
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A barrier node the waiter may not read (its ACL grants no READ) is set all the same:
// IsSet says so, and Wait waits until it is removed, as Curator's waitOnBarrier does
// (it checks with exists, which needs no permission), instead of failing with NoAuth.
func TestWaitOnUnreadableBarrier(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	setter := testutil.ConnectFailFast(t, srv.ConnectString())
	waiter := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/barriers/unreadable"
	_, err := setter.Create(ctx, path, nil, framework.WithParents(),
		framework.WithNodeACL(zk.WorldACL(zk.PermAll&^zk.PermRead)))
	require.NoError(t, err)
	_, _, err = waiter.GetData(ctx, path)
	require.ErrorIs(t, err, framework.ErrNoAuth, "the barrier node is unreadable")
	b := newBarrier(t, waiter, path)
	set, err := b.IsSet(ctx)
	require.NoError(t, err)
	require.True(t, set)

	done := make(chan error, 1)
	go func() { done <- b.Wait(ctx) }()
	// The waiter is waiting once it watches the node; it must not return before.
	deadline := time.After(30 * time.Second)
	for waiter.Watches() == 0 {
		select {
		case err := <-done:
			t.Fatalf("Wait returned %v while the barrier is set", err)
		case <-deadline:
			t.Fatal("the waiter set no watch on the barrier")
		case <-time.After(10 * time.Millisecond):
		}
	}
	require.NoError(t, newBarrier(t, setter, path).Remove(ctx))
	select {
	case err := <-done:
		require.NoError(t, err, "the barrier was removed")
	case <-ctx.Done():
		t.Fatal("the waiter was not released")
	}
	require.NoError(t, setter.Delete(ctx, "/barriers", framework.Quietly()))
}

// A barrier node the waiter may not read, under a parent it may not read either: no
// watch can tell it that the node is gone (ZooKeeper delivers no event on a node to a
// client that may not read it), so Wait looks again with exists, which needs no
// permission, and is released once the barrier is removed.
func TestWaitOnUnreadableBarrierUnderUnreadableParent(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	const parent, path = "/hidden", "/hidden/barrier"
	var (
		mu      sync.Mutex
		checked = make(chan struct{})
	)
	waiter := testutil.ConnectFailFast(t, srv.ConnectString(),
		framework.WithRequestObserver(func(ri framework.RequestInfo) {
			mu.Lock()
			defer mu.Unlock()
			if ri.Op == "exists" && ri.Path == path && ri.Err == nil && checked != nil {
				close(checked)
				checked = nil
			}
		}))
	setter := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	noRead := zk.WorldACL(zk.PermAll &^ zk.PermRead)
	_, err := setter.Create(ctx, parent, nil, framework.WithNodeACL(noRead))
	require.NoError(t, err)
	_, err = setter.Create(ctx, path, nil, framework.WithNodeACL(noRead))
	require.NoError(t, err)
	b := newBarrier(t, waiter, path)
	mu.Lock()
	seen := checked
	mu.Unlock()

	done := make(chan error, 1)
	go func() { done <- b.Wait(ctx) }()
	select {
	case <-seen: // Wait found the barrier set
	case err := <-done:
		t.Fatalf("Wait returned %v while the barrier is set", err)
	case <-ctx.Done():
		t.Fatal("Wait did not check the barrier")
	}
	require.NoError(t, newBarrier(t, setter, path).Remove(ctx))
	select {
	case err := <-done:
		require.NoError(t, err, "the barrier was removed")
	case <-ctx.Done():
		t.Fatal("the waiter was not released")
	}
	require.NoError(t, setter.Delete(ctx, parent))
}
