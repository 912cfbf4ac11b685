package discovery_test

import (
	"errors"
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

// Issue 28, defect 14: the staleness bound the package doc states. The provider's client
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
