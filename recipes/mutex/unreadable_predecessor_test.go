package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// Mutex.Acquire: "blocks until this caller holds the lock, ctx ends or the client
// closes". A holder whose lock node another contender may not read (its client creates
// nodes with a creator-only ACL: a digest identity, as a Curator ACLProvider often gives)
// is still the holder to wait for: the waiter's watch on it must not turn the wait into a
// failure. Here the waiter's data watch (getData needs READ) is refused and Acquire fails
// with NoAuth at once, although its context is live and the lock is merely held.
func TestAcquireWaitsBehindUnreadableHolder(t *testing.T) {
	srv := zktest.NewServer(t)
	const path = "/acl/unreadable"
	admin := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	// The lock's parent is open to everyone.
	_, err := admin.Create(ctx, path, nil, framework.WithContainerParents())
	require.NoError(t, err)
	private := testutil.Connect(t, srv.ConnectString(), framework.WithAuth("digest", []byte("alice:secret")),
		framework.WithACL(zk.DigestACL(zk.PermAll, "alice", "secret")))
	waiterClient := testutil.Connect(t, srv.ConnectString())

	held, err := newMutex(t, private, path).Acquire(ctx)
	require.NoError(t, err)

	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	res := goAcquire(wctx, newMutex(t, waiterClient, path))
	select {
	case r := <-res:
		if r.err == nil {
			_ = r.l.Release(ctx)
			t.Fatal("the waiter got the lock while it was held")
		}
		require.ErrorIs(t, r.err, context.DeadlineExceeded,
			"Acquire failed before its context ended, while the lock was merely held (by a holder whose node it may not read): %v", r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter's Acquire did not return after its context ended")
	}
	require.NoError(t, held.Release(ctx))
}

// A waiter behind a holder whose node it may not read gets the lock once the holder
// releases it: its watch on that node (an exists watch, needing no permission) fires.
func TestAcquireBehindUnreadableHolderOnceReleased(t *testing.T) {
	srv := zktest.NewServer(t)
	const path = "/acl/unreadable-released"
	admin := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	_, err := admin.Create(ctx, path, nil, framework.WithContainerParents())
	require.NoError(t, err)
	private := testutil.Connect(t, srv.ConnectString(), framework.WithAuth("digest", []byte("alice:secret")),
		framework.WithACL(zk.DigestACL(zk.PermAll, "alice", "secret")))
	waiterClient := testutil.Connect(t, srv.ConnectString())

	held, err := newMutex(t, private, path).Acquire(ctx)
	require.NoError(t, err)
	res := goAcquire(ctx, newMutex(t, waiterClient, path))
	require.Eventually(t, func() bool {
		kids, _, err := admin.Children(ctx, path)
		return err == nil && len(kids) == 2
	}, 10*time.Second, 5*time.Millisecond, "the waiter queues")
	time.Sleep(200 * time.Millisecond) // let it set its watch (a wait that cannot make the test pass)
	require.NoError(t, held.Release(ctx))
	select {
	case r := <-res:
		require.NoError(t, r.err, "the waiter gets the lock once the holder released it")
		require.NoError(t, r.l.Release(ctx))
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter did not get the lock after the unreadable holder released it")
	}
}
