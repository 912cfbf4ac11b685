package mutex_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// A revocable lease re-reads its node when its watch fires; when that read fails (here:
// the proxy stalls as it goes out, longer than the read's own bound, while the session
// lives on), the lease must read again once it can, or it never hears the revocation.
func TestRevocationHeardAfterFailedReArm(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed atomic.Bool // stall at the next getData: the lease's re-read after its watch fired
	var stalled atomic.Bool
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "getData" && armed.CompareAndSwap(true, false) {
				stalled.Store(true)
				proxy.Stall()
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	revoked := make(chan struct{}, 1)
	m := newMutex(t, c, "/revoke/rearm", mutex.WithRevocationListener(func(l *mutex.Lease) {
		select {
		case revoked <- struct{}{}:
		default:
		}
		_ = l.Release(context.Background())
	}))
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	armed.Store(true)
	require.NoError(t, mutex.Revoke(ctx, other, l.Node()))
	// The re-read is stalled; it fails at its own bound (10 s). Heal after that.
	require.Eventually(t, stalled.Load, 20*time.Second, 10*time.Millisecond, "the lease did not re-read its node")
	time.Sleep(11 * time.Second) // past the re-read's 10 s bound: it has failed (this sleep sets the scene; no outcome depends on its length being enough or not)
	proxy.Heal()
	select {
	case <-revoked:
	case <-ctx.Done():
		t.Fatal("the revocation was never heard: the lease gave up its watch when a re-read failed")
	}
	testutil.RequireNoChildren(t, srv.ConnectString(), "/revoke/rearm")
}

// A revocation request whose watch event is lost with the holder's connection is heard
// once the session is back on a new connection, when the lease outlives the connection
// (SessionErrorPolicy): the server fired and forgot the watch as the request was written,
// so only the watch set again on the new connection (go-zookeeper's setWatches, relative
// to the last zxid the client saw) can bring it. Under the standard policy the lease ends
// at Suspended and hears nothing more (mutex.WithRevocationListener).
func TestRevocationLostWithTheConnectionIsHeardAfter(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithErrorPolicy(framework.SessionErrorPolicy))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	revoked := make(chan *mutex.Lease, 1)
	m := newMutex(t, c, "/revoke/lostevent", mutex.WithRevocationListener(func(l *mutex.Lease) {
		select {
		case revoked <- l:
		default:
		}
	}))
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	gen := c.Generation()
	proxy.StallToClients()                                 // the event is held in the proxy...
	require.NoError(t, mutex.Revoke(ctx, other, l.Node())) // ...once the server sent it
	proxy.DropConnections()                                // and lost with the connection
	proxy.Heal()
	select {
	case got := <-revoked:
		require.Same(t, l, got)
	case <-l.Done():
		t.Fatal("the lease ended though its session lives on")
	case <-ctx.Done():
		t.Fatal("the revocation request lost with the connection was never heard")
	}
	require.Equal(t, gen, c.Generation(), "the same session throughout")
	require.NoError(t, l.Release(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), "/revoke/lostevent")
}
