package mutex_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// releasedWhileReArming sets up a revocable lease whose re-read of its node (after a
// revocation request's watch event) is held in the proxy on its way to the server, and
// releases the lease meanwhile with a context that ends: Release returns while the read
// is still in flight.
func releasedWhileReArming(t *testing.T, path string) (srv *zktest.Server, proxy *zktest.Proxy, c *framework.Client, l *mutex.Lease, afterRelease *atomic.Int32, lctx context.Context, releaseErr error) {
	t.Helper()
	srv = zktest.NewServer(t)
	proxy = zktest.NewProxy(t, srv.ConnectString())
	var armed, stalled atomic.Bool
	c = testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "getData" && armed.CompareAndSwap(true, false) {
				stalled.Store(true)
				proxy.StallToServers() // the re-read is held before the server sees it
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	var released atomic.Bool
	afterRelease = new(atomic.Int32)
	m := newMutex(t, c, path, mutex.WithRevocationListener(func(*mutex.Lease) {
		if released.Load() {
			afterRelease.Add(1)
		}
	}))
	var err error
	l, err = m.Acquire(ctx)
	require.NoError(t, err)
	// Let the lease's first read (it is revocable: it reads its node at once) be answered.
	_, err = l.Token(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Sync(ctx, path))
	armed.Store(true)
	require.NoError(t, mutex.Revoke(ctx, other, l.Node())) // the event reaches the holder; its re-read is held
	require.Eventually(t, stalled.Load, 10*time.Second, 5*time.Millisecond, "the lease did not re-read its node")
	rctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	lctx, lcancel := l.Context(context.Background()) // work under the lock follows it
	t.Cleanup(lcancel)
	released.Store(true)
	releaseErr = l.Release(rctx)
	return srv, proxy, c, l, afterRelease, lctx, releaseErr
}

// WithRevocationListener: "Only a live lease hears requests". A lease whose re-read (sent
// because a revocation request arrived) is still in flight when it is released must not
// call the listener once that read's answer comes: the lease was released, by its holder,
// before the answer.
func TestRevocationListenerNotCalledAfterRelease(t *testing.T) {
	srv, proxy, c, l, afterRelease, _, relErr := releasedWhileReArming(t, "/revoke/afterrelease")
	t.Logf("Release returned %v", relErr)
	proxy.Heal()
	testutil.WaitClosed(t, l.Done(), 15*time.Second, "the lease's Done")
	ctx := testutil.Context(t, 20*time.Second)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	c.Close() // waits for the listener's goroutine, if one was started
	require.Zero(t, afterRelease.Load(), "the revocation listener was called for a lease already released")
	testutil.RequireNoChildren(t, srv.ConnectString(), "/revoke/afterrelease")
}

// Lease.Done: "closed when the lease is released"; Lease.Context: "cancelled when the
// lease ends (Done), so that work under the lock stops" (cause ErrReleased). Once Release
// has returned, Done must be closed and the lease's Context over: here the lease's re-read of its node is in flight
// (held on its way to the server) when Release returns.
func TestLeaseDoneClosedOnceReleaseReturns(t *testing.T) {
	_, proxy, _, l, _, lctx, relErr := releasedWhileReArming(t, "/revoke/doneafterrelease")
	defer proxy.Heal()
	t.Logf("Release returned %v", relErr)
	assert.True(t, testutil.IsClosed(l.Done()), "Release returned (%v) but the lease's Done is still open", relErr)
	assert.Error(t, lctx.Err(), "Release returned but the lease's Context, taken before, is still live (cause %v)", context.Cause(lctx))
}
