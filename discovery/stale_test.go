package discovery_test

import (
	"errors"
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

// The staleness bound the package doc states. The provider's client
// is stalled (it hears nothing, and is told nothing) and an instance is deleted at once:
// the provider hands it out until its client reports Lost, which it does a session
// timeout after it noticed the silence, and it notices the silence 2/3 of the session
// timeout after it last heard from the server. The doc's bound is 5/3 of the session
// timeout after the delete (the old one, a session timeout, was broken: 3.3 s with a 2 s
// session timeout); 1 s on top is slack for a loaded machine.
func TestProviderStalenessBound(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	const session = 2 * time.Second
	c := testutil.ConnectFailFast(t, server.ConnectString(), framework.WithSessionTimeout(session),
		framework.WithDialer(proxy.Dialer()))
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const base = "/disc/stale"
	od, err := discovery.New[details](other, base)
	require.NoError(t, err)
	defer od.Close()
	doomed := newInstance(t, "svc", "doomed", 1)
	require.NoError(t, od.Register(ctx, doomed))
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	all, err := p.GetAllInstances()
	require.NoError(t, err)
	require.Len(t, all, 1)

	proxy.Stall()
	require.NoError(t, od.Unregister(ctx, doomed))
	gone := time.Now()
	var served time.Duration
	for time.Since(gone) < 10*time.Second {
		all, err := p.GetAllInstances()
		if errors.Is(err, discovery.ErrStale) || (err == nil && len(all) == 0) {
			break
		}
		served = time.Since(gone)
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("a deleted instance was handed out %v after its delete (session timeout %v)", served.Round(time.Millisecond), session)
	assert.LessOrEqual(t, served, session*5/3+time.Second, "the doc's bound: 5/3 of the session timeout")
	proxy.Heal()
	require.NoError(t, p.Close())
}

// An instance deleted and registered again (same id, another port) while the provider's
// client was cut off: once the provider is fresh again after the lost session, it never
// hands out the deleted one. The cache's own reads of the instances' data are held until
// the end of the check, so the check runs before the cache has the new node.
func TestProviderAfterLostSkipsAnInstanceRegisteredAgainMeanwhile(t *testing.T) {
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
				<-release
			}
		}))
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/again"
	od, err := discovery.New[details](other, base)
	require.NoError(t, err)
	defer od.Close()
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "x", 1)))
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
	require.NoError(t, od.Unregister(ctx, newInstance(t, "svc", "x", 1)))
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "x", 2)))
	waitEvent(t, events, discovery.CacheLost, 30*time.Second)
	hold.Store(true)
	proxy.Heal()
	require.Eventually(t, p.Cache().Fresh, 30*time.Second, 10*time.Millisecond)
	all, err := p.GetAllInstances()
	require.NoError(t, err)
	for _, i := range all {
		assert.NotEqual(t, 1, i.Port, "the provider, fresh again, handed out the instance deleted while it was cut off")
	}

	hold.Store(false)
	close(release)
	require.Eventually(t, func() bool {
		i, err := p.GetInstance()
		return err == nil && i.Port == 2
	}, 30*time.Second, 10*time.Millisecond, "the instance registered again")
	require.NoError(t, p.Close())
}
