package discovery_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A provider is safe for concurrent use, and Fresh "reports whether the cache can be
// trusted". While its Start has not read the registry yet (here: its connection is
// stalled), the cache holds nothing it read: it must not report itself fresh, nor the
// provider say the service has "none registered" while an instance is.
func TestProviderDuringStartIsNotFresh(t *testing.T) {
	connect := shared(t)
	other := testutil.Connect(t, connect)
	proxy := zktest.NewProxy(t, connect)
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/duringstart"
	od, err := discovery.New[details](other, base)
	require.NoError(t, err)
	defer od.Close()
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "x", 1)))

	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	defer p.Close()

	proxy.Stall()
	defer proxy.Heal()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- p.Start(sctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		fresh := p.Cache().Fresh()
		_, gerr := p.GetInstance()
		if fresh || errors.Is(gerr, discovery.ErrNoInstance) {
			t.Fatalf("while Start has read nothing (connection stalled), Fresh() = %v and GetInstance() = %v; instance x is registered", fresh, gerr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-started
}
