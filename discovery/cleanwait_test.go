package discovery_test

import (
	"context"
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

// A Register that gives up while it waits for the cleanup of a failed Register of the same
// id says which registration it was and why, like every other error of Register, and
// still matches its context's error.
func TestRegisterWaitingForACleanupSaysSo(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	var armed atomic.Bool
	hook := framework.WithRequestHook(func(op string) {
		if op == "create" && armed.CompareAndSwap(true, false) {
			proxy.HoldReplies()
		}
	})
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second), hook)
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	d, err := discovery.New[details](c, "/disc/cleanwait")
	require.NoError(t, err)
	defer d.Close()
	_, err = other.Create(ctx, "/disc/cleanwait/svc", nil, framework.WithParents())
	require.NoError(t, err)
	_, err = c.Exists(ctx, "/")
	require.NoError(t, err)

	// A Register cancelled with its create held: its cleanup waits for that create.
	armed.Store(true)
	actx, acancel := context.WithCancel(ctx)
	first := testutil.Go(actx, func(ctx context.Context) error { return d.Register(ctx, newInstance(t, "svc", "x", 1)) })
	require.Eventually(t, func() bool {
		st, err := other.Exists(ctx, "/disc/cleanwait/svc/x")
		return err == nil && st != nil
	}, 20*time.Second, 5*time.Millisecond, "the first create is applied (its reply held)")
	acancel()
	require.ErrorIs(t, testutil.Result(t, first, 30*time.Second, "the cancelled Register"), context.Canceled)

	// The same id with a context ended already: it can only wait for that cleanup, and gives up.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	err = d.Register(cctx, newInstance(t, "svc", "x", 2))
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "discovery: register x: waiting for an earlier registration's node to be removed")

	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	testutil.RequireNoChildren(t, server.ConnectString(), "/disc/cleanwait/svc")
}
