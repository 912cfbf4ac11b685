package mutex_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// Lease.Done: "closed when the lease is released or may have been lost (...; for a
// revocable lock, also when someone else deletes its node: Release then reports
// ErrLeaseLost). Critical work should stop when it closes." An operator takes READ on the
// holder's lock node away from the holder's client (setACL fires no watch), leaving it to
// the waiter, then deletes the node. ZooKeeper fires no watch of a client for a node it
// may not read: the holder's data watch on its own node never fires, while the waiter's
// does and the waiter takes the lock. The holder's Done stays open: two holders at once.
func TestRevocableLeaseNodeMadeUnreadableThenDeletedEndsLease(t *testing.T) {
	testutil.KnownDefect(t, "a lease whose node is made unreadable to it is not told of that node's delete (ZooKeeper fires no watch on a node its client may not read)")
	srv := zktest.NewServer(t)
	const path = "/locks/made-unreadable"
	ctx := testutil.Context(t, 60*time.Second)
	ch := testutil.Connect(t, srv.ConnectString())
	cw := testutil.Connect(t, srv.ConnectString(), framework.WithAuth("digest", []byte("bob:secret")))
	admin := testutil.Connect(t, srv.ConnectString(), framework.WithAuth("digest", []byte("admin:secret")))

	held, err := newMutex(t, ch, path, mutex.WithRevocationListener(func(*mutex.Lease) {})).Acquire(ctx)
	require.NoError(t, err)
	node := held.Node()
	require.Eventually(t, func() bool { return testutil.ZKWatchers(t, ch, node).Data > 0 }, 10*time.Second,
		5*time.Millisecond, "the revocable holder watches its node")
	res := goAcquire(ctx, newMutex(t, cw, path))
	require.Eventually(t, func() bool { return testutil.ZKWatchers(t, cw, node).Data > 0 }, 10*time.Second,
		5*time.Millisecond, "the waiter watches the holder's node")

	acl := append(zk.DigestACL(zk.PermAll, "admin", "secret"), zk.DigestACL(zk.PermRead, "bob", "secret")...)
	_, err = admin.SetACL(ctx, node, acl, -1)
	require.NoError(t, err)
	require.NoError(t, admin.Delete(ctx, node))

	var other acquired
	select {
	case other = <-res:
		require.NoError(t, other.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter did not get the lock once the holder's node was deleted")
	}
	defer func() { _ = other.l.Release(ctx) }()
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first holder's Done is still open 5 s after its lock node was deleted, while the waiter holds the lock")
	}
	require.ErrorIs(t, held.Release(ctx), mutex.ErrLeaseLost)
}
