package discovery_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A listener closes the cache: the listeners after it are not told of that event, nor of
// any other, once Close has returned; a Close from elsewhere waits until no listener runs.
func TestCacheListenerClosingTheCacheEndsTheTelling(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	d, err := discovery.New[details](c, "/disc/listenerclose")
	require.NoError(t, err)
	defer d.Close()
	sc, err := d.NewCache("svc")
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))

	var closed atomic.Bool
	closerDone := make(chan struct{})
	told := make(chan discovery.CacheEventType, 10)
	sc.AddListener(func(ev discovery.CacheEvent) {
		if ev.Type != discovery.CacheChanged || closed.Load() {
			return
		}
		assert.NoError(t, sc.Close())
		closed.Store(true)
		close(closerDone)
	})
	sc.AddListener(func(ev discovery.CacheEvent) {
		if closed.Load() {
			told <- ev.Type
		}
	})
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "a", 1)))
	testutil.WaitClosed(t, closerDone, 30*time.Second, "the listener's Close")
	require.NoError(t, sc.Close()) // from the test: returns once no listener runs
	select {
	case ev := <-told:
		t.Fatalf("a listener was told %v after another listener closed the cache", ev)
	case <-time.After(time.Second): // a negative check: nothing more comes
	}
	require.NoError(t, d.Close())
	testutil.RequireNoChildren(t, connect, "/disc/listenerclose/svc")
}

// A listener that panics on CacheReconnected: the cache still reads the registry again
// after a lost session and is fresh again; the listeners after it are told.
func TestCacheListenerPanickingOnReconnectedLeavesTheCacheFresh(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/panicky"
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	p.Cache().AddListener(func(ev discovery.CacheEvent) {
		if ev.Type == discovery.CacheReconnected {
			panic("a listener's bug")
		}
	})
	events := make(chan discovery.CacheEventType, 100)
	p.Cache().AddListener(func(ev discovery.CacheEvent) { events <- ev.Type })
	require.NoError(t, p.Start(ctx))

	proxy.Stall()
	waitEvent(t, events, discovery.CacheLost, 30*time.Second)
	_, err = p.GetInstance()
	require.ErrorIs(t, err, discovery.ErrStale)
	proxy.Heal()
	require.Eventually(t, p.Cache().Fresh, 30*time.Second, 10*time.Millisecond,
		"the cache stayed stale after a listener panicked on CacheReconnected")
	waitEvent(t, events, discovery.CacheReconnected, 30*time.Second)
	_, err = p.GetInstance()
	require.ErrorIs(t, err, discovery.ErrNoInstance)
	require.NoError(t, p.Close())
}
