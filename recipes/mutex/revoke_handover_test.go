package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// WithRevocationListener: "fn is called ... when someone asks the holder to let go, by
// writing __REVOKE__ into its node". One request asks the holder at the time. With the
// local queue (the default) the node is handed to the next local waiter when the revoked
// holder releases: that waiter was asked nothing, and must not be told to let go by the
// request its predecessor already answered.
func TestRevocationNotPassedOnToLocalWaiter(t *testing.T) {
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/revoke/handover"
	var first *mutex.Lease
	firstSet := make(chan struct{})
	revoked := make(chan *mutex.Lease, 10)
	m := newMutex(t, c, path, mutex.WithRevocationListener(func(l *mutex.Lease) {
		<-firstSet
		revoked <- l
		if l == first {
			_ = l.Release(context.Background()) // the holder asked lets go
		}
	}))
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	first = l
	close(firstSet)
	next := goAcquire(ctx, m)
	require.Eventually(t, func() bool { return m.LocalWaiters() == 1 }, 10*time.Second, 5*time.Millisecond)

	require.NoError(t, mutex.Revoke(ctx, other, l.Node()))
	select {
	case got := <-revoked:
		require.Same(t, first, got, "the first call is for the holder asked")
	case <-ctx.Done():
		t.Fatal("the holder never heard the revocation")
	}
	var b acquired
	select {
	case b = <-next:
		require.NoError(t, b.err)
	case <-ctx.Done():
		t.Fatal("the local waiter never got the lock")
	}
	t.Logf("handed over: same node %v", b.l.Node() == first.Node())
	select {
	case got := <-revoked:
		require.NotSame(t, b.l, got, "the next local holder, asked nothing, was told to let go (node %s)", b.l.Node())
		t.Fatalf("an unexpected revocation call for %s", got.Node())
	case <-time.After(5 * time.Second):
	}
	require.NoError(t, b.l.Release(ctx))
}
