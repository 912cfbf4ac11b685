package discovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// ServiceCache: "a slow listener delays neither the cache's updates nor the stale flag,
// only what the listeners after it hear", and Start "returns once they are in the cache
// (or ctx ends: the cache is then closed ...)". A listener still busy with the
// CacheSuspended of a stalled connection must not hold Start past its context.
func TestCacheStartReturnsWithItsContextWhileAListenerIsSlow(t *testing.T) {
	connect := shared(t)
	proxy := zktest.NewProxy(t, connect)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(3*time.Second))
	ctx := testutil.Context(t, 90*time.Second)
	d, err := discovery.New[details](c, "/disc/startslow")
	require.NoError(t, err)
	defer d.Close()
	sc, err := d.NewCache("svc")
	require.NoError(t, err)
	got := make(chan discovery.CacheEvent, 1)
	release := make(chan struct{})
	sc.AddListener(func(ev discovery.CacheEvent) {
		select {
		case got <- ev:
		default:
		}
		<-release
	})
	proxy.Stall()
	t.Cleanup(func() {
		close(release)
		proxy.Heal()
		_ = sc.Close()
	})
	sctx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- sc.Start(sctx) }()
	select {
	case ev := <-got:
		require.Equal(t, discovery.CacheSuspended, ev.Type)
	case <-time.After(20 * time.Second):
		t.Fatal("no CacheSuspended during Start on a stalled connection")
	}
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(15 * time.Second):
		t.Fatalf("ServiceCache.Start(ctx with a 6 s deadline) has not returned %v after it began: a slow listener holds it", time.Since(start).Round(time.Second))
	}
}
