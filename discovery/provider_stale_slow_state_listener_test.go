package discovery_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// The package doc: "once the client reports the session lost, providers return ErrStale
// until the cache has read the registry again ... a provider may hand out an instance for
// up to 5/3 of the session timeout after its node was deleted ..., not longer." The
// client's state listeners are called one at a time ("a slow listener delays the next
// listener calls"): an application's own state listener, registered first, still busy
// with the Lost (a clean-up of its own, say) must not keep the provider fresh, handing
// out an instance whose node is gone, after the client reported the session lost.
func TestProviderStaleOnceLostWhileAnotherStateListenerIsBusy(t *testing.T) {
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	const session = 2 * time.Second
	c := testutil.ConnectFailFast(t, server.ConnectString(), framework.WithSessionTimeout(session),
		framework.WithDialer(proxy.Dialer()))
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)

	lost := make(chan struct{})
	release := make(chan struct{})
	remove := c.AddListener(func(s framework.State) {
		if s == framework.Lost {
			close(lost)
			<-release // the application's own clean-up on Lost
		}
	})
	t.Cleanup(remove)

	const base = "/disc/staleslowlistener"
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
	defer p.Close()
	require.NoError(t, p.Start(ctx))
	all, err := p.GetAllInstances()
	require.NoError(t, err)
	require.Len(t, all, 1)

	proxy.Stall()
	defer proxy.Heal()
	defer close(release)
	require.NoError(t, od.Unregister(ctx, doomed))
	gone := time.Now()
	select {
	case <-lost:
	case <-time.After(20 * time.Second):
		t.Fatal("the client never reported Lost on a stalled connection")
	}
	reported := time.Since(gone)
	// A second after the client reported Lost (well past the doc's 5/3 bound).
	time.Sleep(time.Second)
	all, err = p.GetAllInstances()
	if errors.Is(err, discovery.ErrStale) || (err == nil && len(all) == 0) {
		return
	}
	require.NoError(t, err)
	t.Fatalf("the client reported Lost %v after the delete; %v after the delete the provider still hands out %d instance(s) (%s), not ErrStale; Fresh() = %v",
		reported.Round(time.Millisecond), time.Since(gone).Round(time.Millisecond), len(all), all[0].ID, p.Cache().Fresh())
}
