package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestRevocableLease: a lease holder asked to let go (__REVOKE__ written into its lease
// node by another client) hears it and releases that lease; a waiter gets it; the
// holder's other lease is not touched (CURATOR-650).
func TestRevocableLease(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	ca := testutil.Connect(t, srv.ConnectString())
	cb := testutil.Connect(t, srv.ConnectString())
	const path = "/sem/revocable"

	revoked := make(chan *semaphore.Lease, 2)
	sa, err := semaphore.New(ca, path, 2, semaphore.WithRevocationListener(func(l *semaphore.Lease) {
		revoked <- l
	}))
	require.NoError(t, err)
	l1, err := sa.Acquire(ctx)
	require.NoError(t, err)
	l2, err := sa.Acquire(ctx)
	require.NoError(t, err)

	sb, err := semaphore.New(cb, path, 2)
	require.NoError(t, err)
	got := make(chan *semaphore.Lease, 1)
	waiting := testutil.Go(ctx, func(ctx context.Context) error {
		l, err := sb.Acquire(ctx)
		if err == nil {
			got <- l
		}
		return err
	})
	require.Eventually(t, func() bool { return len(testutil.Children(t, srv.ConnectString(), path+"/leases")) == 3 },
		20*time.Second, 10*time.Millisecond, "b waits, its lease node behind a's two")

	require.NoError(t, semaphore.Revoke(ctx, cb, l1.Node()))
	select {
	case l := <-revoked:
		assert.Same(t, l1, l, "the revoked lease is the one asked")
		require.NoError(t, l.Release(ctx))
	case <-time.After(20 * time.Second):
		t.Fatal("the holder did not hear the revocation")
	}
	require.NoError(t, testutil.Result(t, waiting, 20*time.Second, "b gets the released lease"))
	lb := <-got
	assert.False(t, testutil.IsClosed(l2.Done()), "the other lease is still held")
	assert.Empty(t, revoked, "only the asked lease heard it")

	require.NoError(t, semaphore.Revoke(ctx, cb, l1.Node()), "a node that is gone is not an error")
	require.NoError(t, lb.Release(ctx))
	require.NoError(t, l2.Release(ctx))
	assert.Error(t, semaphore.Revoke(ctx, nil, "/x"), "a nil client")
	requireEmpty(t, srv.ConnectString(), path)
}
