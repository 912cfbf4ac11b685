package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// The registry is keyed by connection: after a simulated Lost the client
// replaces its go-zookeeper connection; the watches set on the old one end once with
// EventNotWatching, and the same (path, kind) set on the new connection is a new watch
// that fires once on the next change; the old one is not told again.
func TestWatchSimulatedLostEndsOldConnectionsWatchesOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(10*time.Second),
		framework.WithSimulatedExpiry(0.3), framework.WithConnectionTimeout(2*time.Second),
		framework.WithDialer(proxy.Dialer()), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	rec := recordStates(c)
	require.NoError(t, c.Start())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntilConnected(ctx))
	_, err = c.Create(ctx, "/sl/a", []byte("x"), framework.WithParents())
	require.NoError(t, err)

	_, _, wd, err := c.GetDataW(ctx, "/sl/a")
	require.NoError(t, err)
	_, _, wc, err := c.ChildrenW(ctx, "/sl")
	require.NoError(t, err)
	_, we, err := c.ExistsW(ctx, "/sl/missing")
	require.NoError(t, err)
	h := newCountingHandler()
	old := []*framework.Watch{wd, wc, we}
	for _, w := range old {
		w.Handle(h)
	}
	require.Equal(t, 3, c.Watches())

	proxy.Stall()
	rec.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Lost)
	proxy.Heal()
	rec.waitFor(t, 30*time.Second, framework.Connected, framework.Suspended, framework.Lost, framework.Reconnected)
	require.Eventually(t, func() bool {
		return h.count(wd) == 1 && h.count(wc) == 1 && h.count(we) == 1
	}, 20*time.Second, 10*time.Millisecond, "the old connection's watches end")
	for _, w := range old {
		require.Equal(t, zk.EventNotWatching, w.Event().Type)
	}
	require.Equal(t, 0, c.Watches())

	_, _, wd2, err := c.GetDataW(ctx, "/sl/a")
	require.NoError(t, err)
	_, _, wc2, err := c.ChildrenW(ctx, "/sl")
	require.NoError(t, err)
	_, we2, err := c.ExistsW(ctx, "/sl/missing")
	require.NoError(t, err)
	h2 := newCountingHandler()
	for _, w := range []*framework.Watch{wd2, wc2, we2} {
		require.NotContains(t, old, w)
		w.Handle(h2)
	}
	require.Equal(t, 3, c.Watches())
	_, err = c.SetData(ctx, "/sl/a", []byte("y"), -1)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/sl/missing", nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return h2.count(wd2) == 1 && h2.count(wc2) == 1 && h2.count(we2) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, zk.EventNodeDataChanged, wd2.Event().Type)
	require.Equal(t, zk.EventNodeChildrenChanged, wc2.Event().Type)
	require.Equal(t, zk.EventNodeCreated, we2.Event().Type)
	require.Equal(t, 0, c.Watches())
	for _, w := range old {
		require.Equal(t, 1, h.count(w))
	}
}
