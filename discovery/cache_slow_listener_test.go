package discovery_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// blockOnChange adds a listener to p's cache that, once armed is closed, blocks on the
// first CacheChanged it hears until release is closed; blocked is closed when it does.
func blockOnChange(p *discovery.ServiceProvider[details]) (arm func(), blocked, release chan struct{}) {
	armed := make(chan struct{})
	blocked, release = make(chan struct{}), make(chan struct{})
	once := false
	p.Cache().AddListener(func(ev discovery.CacheEvent) {
		if ev.Type != discovery.CacheChanged || once || !testutil.IsClosed(armed) {
			return
		}
		once = true
		close(blocked)
		<-release
	})
	return func() { close(armed) }, blocked, release
}

// ids are the ids of the instances p hands out now (nil on an error).
func ids(p *discovery.ServiceProvider[details]) []string {
	all, err := p.GetAllInstances()
	if err != nil {
		return nil
	}
	var out []string
	for _, i := range all {
		out = append(out, i.ID)
	}
	return out
}

// A listener that takes its time (here: blocked until the end) delays no removal: an
// instance deleted while it is busy is no longer handed out.
func TestCacheSlowListenerDelaysNoRemoval(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	other := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	const base = "/disc/slowremoval"
	od, err := discovery.New[details](other, base)
	require.NoError(t, err)
	defer od.Close()
	gone := newInstance(t, "svc", "gone", 1)
	require.NoError(t, od.Register(ctx, gone))
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "stays", 2)))
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	arm, blocked, release := blockOnChange(p)
	defer close(release)
	require.NoError(t, p.Start(ctx))
	require.Equal(t, []string{"gone", "stays"}, ids(p))

	arm()
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "new", 3)))
	testutil.WaitClosed(t, blocked, 30*time.Second, "the listener told of the new instance")
	require.NoError(t, od.Unregister(ctx, gone))
	require.Eventually(t, func() bool { return !slices.Contains(ids(p), "gone") }, 30*time.Second, 10*time.Millisecond,
		"a deleted instance was still handed out while a listener was busy")
}

// A listener that takes its time (here: blocked until the end) does not delay the stale
// flag: the client reports the session lost and the provider answers ErrStale.
func TestCacheSlowListenerDelaysNoStaleness(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/slowstale"
	od, err := discovery.New[details](other, base)
	require.NoError(t, err)
	defer od.Close()
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "a", 1)))
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	arm, blocked, release := blockOnChange(p)
	defer close(release)
	states := testutil.States(c)
	require.NoError(t, p.Start(ctx))
	require.Equal(t, []string{"a"}, ids(p))

	arm()
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "b", 2)))
	testutil.WaitClosed(t, blocked, 30*time.Second, "the listener told of the new instance")
	proxy.Stall()
	testutil.WaitState(t, states, framework.Lost, 30*time.Second)
	require.Eventually(t, func() bool {
		_, err := p.GetAllInstances()
		return errors.Is(err, discovery.ErrStale) && !p.Cache().Fresh()
	}, 30*time.Second, 10*time.Millisecond, "the provider was not stale after the client lost its session while a listener was busy")
	proxy.Heal()
}
