package discovery_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// heldRegister is a ServiceDiscovery at base whose client reaches the server through a
// proxy, after a Register of svc/x (port 1) was cancelled while its create was held: the
// create is applied, its reply is held until the proxy heals, and the cancelled call's
// background cleanup waits for it.
type heldRegister struct {
	server   *zktest.Server
	proxy    *zktest.Proxy
	c, other *framework.Client
	d        *discovery.ServiceDiscovery[details]
	ctx      context.Context
	path     string // base/svc/x
}

func cancelRegisterWithHeldCreate(t *testing.T, base string, opts ...discovery.Option) *heldRegister {
	t.Helper()
	h := &heldRegister{server: zktest.NewServer(t), path: base + "/svc/x"}
	h.proxy = zktest.NewProxy(t, h.server.ConnectString())
	var armed atomic.Bool
	hook := framework.WithRequestHook(func(op string) {
		if op == "create" && armed.CompareAndSwap(true, false) {
			h.proxy.HoldReplies()
		}
	})
	h.c = testutil.ConnectFailFast(t, h.proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second), hook)
	h.other = testutil.Connect(t, h.server.ConnectString())
	h.ctx = testutil.Context(t, 90*time.Second)
	d, err := discovery.New[details](h.c, base, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	h.d = d
	_, err = h.other.Create(h.ctx, base+"/svc", nil, framework.WithParents())
	require.NoError(t, err)
	_, err = h.c.Exists(h.ctx, "/")
	require.NoError(t, err)

	armed.Store(true)
	actx, acancel := context.WithCancel(h.ctx)
	first := testutil.Go(actx, func(ctx context.Context) error { return d.Register(ctx, newInstance(t, "svc", "x", 1)) })
	require.Eventually(t, func() bool {
		st, err := h.other.Exists(h.ctx, h.path)
		return err == nil && st != nil
	}, 20*time.Second, 5*time.Millisecond, "the first create is applied (its reply held)")
	acancel()
	require.ErrorIs(t, testutil.Result(t, first, 30*time.Second, "the cancelled Register"), context.Canceled)
	return h
}
