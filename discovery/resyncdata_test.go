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

// An instance disabled (Update, Enabled false: drained) while the provider's client was
// cut off: once the provider is fresh again after the lost session ("the cache is stale
// until, reconnected, it has read the registry again"), it never hands out the instance
// as it was before the update. The cache's reads of the instances' data are held (at
// most 10 s) until the check, so the check runs before the path-children cache has the
// new data; a cache that reads the data itself before it says it is fresh is only
// delayed by the hold.
func TestProviderAfterLostSkipsAnInstanceDisabledMeanwhile(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	var hold atomic.Bool
	release := make(chan struct{})
	defer func() {
		if !testutil.IsClosed(release) {
			close(release)
		}
	}()
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond),
		framework.WithRequestHook(func(op string) {
			if op == "getData" && hold.Load() {
				select {
				case <-release:
				case <-time.After(10 * time.Second):
				}
			}
		}))
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/disabled"
	od, err := discovery.New[details](other, base)
	require.NoError(t, err)
	defer od.Close()
	inst := newInstance(t, "svc", "x", 1)
	require.NoError(t, od.Register(ctx, inst))
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	events := make(chan discovery.CacheEventType, 100)
	p.Cache().AddListener(func(ev discovery.CacheEvent) { events <- ev.Type })
	require.NoError(t, p.Start(ctx))
	i, err := p.GetInstance()
	require.NoError(t, err)
	require.Equal(t, 1, i.Port)

	proxy.Stall()
	drained := *inst
	drained.Enabled = false
	require.NoError(t, od.Update(ctx, &drained))
	waitEvent(t, events, discovery.CacheLost, 30*time.Second)
	hold.Store(true)
	proxy.Heal()
	require.Eventually(t, p.Cache().Fresh, 30*time.Second, 10*time.Millisecond)
	all, err := p.GetAllInstances()
	require.NoError(t, err)
	for _, i := range all {
		assert.Failf(t, "the provider, fresh again, handed out the instance disabled while it was cut off", "%s/%s port %d enabled %v", i.Name, i.ID, i.Port, i.Enabled)
	}

	hold.Store(false)
	close(release)
	require.Eventually(t, func() bool {
		all, err := p.GetAllInstances()
		return err == nil && len(all) == 0
	}, 30*time.Second, 10*time.Millisecond, "the instance disabled")
	require.NoError(t, p.Close())
}
