package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// Start under BuildInitialCache "returns once the children were read ..., or with an
// error wrapping ctx.Err() — the cache is then closed". A listener registered before
// Start that is still handling an event the cache sent during the build (here the
// ConnectionSuspended of a stalled connection; it hands events to a channel its caller
// reads once Start has returned) must not hold Start past its context.
func TestPathChildrenCacheStartReturnsWithItsContextWhileAListenerIsBusy(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := newClient(t, proxy.ConnectString(), framework.WithSessionTimeout(3*time.Second))
	owner := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const root = "/startbusy"
	create(t, owner, root+"/a", "a")
	t.Cleanup(func() { _ = owner.Delete(ctx, root, framework.WithChildren(), framework.Quietly()) })

	pc, err := cache.NewPathChildrenCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	got := make(chan cache.Event, 1)
	release := make(chan struct{})
	pc.AddListener(func(ev cache.Event) {
		select {
		case got <- ev:
		default:
		}
		<-release // busy until the caller reads its events, after Start
	})
	proxy.Stall()
	t.Cleanup(func() {
		close(release)
		proxy.Heal()
		_ = pc.Close()
	})

	sctx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- pc.Start(sctx) }()
	select {
	case ev := <-got:
		require.Equal(t, cache.ConnectionSuspended, ev.Type)
	case <-time.After(20 * time.Second):
		t.Fatal("no ConnectionSuspended during the build on a stalled connection")
	}
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(15 * time.Second):
		t.Fatalf("Start(ctx with a 6 s deadline) has not returned %v after it began: it waits for a listener", time.Since(start).Round(time.Second))
	}
}
