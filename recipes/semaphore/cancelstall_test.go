package semaphore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// An Acquire of a full semaphore cancelled while its connection is stalled returns at
// once, leaving its cleanup (its lease node's delete, the inner lock's release) to run in
// the background, instead of waiting for each step's own bound (10 s each). No request can
// be answered while the proxy stalls, and the connection is not given up for 40 s (2/3 of
// the session timeout): any delete that completed before Acquire returned was waited for.
// Once the proxy heals, nothing of the cancelled Acquire is left.
func TestCancelledAcquireOnStalledConnectionReturnsAtOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var deletes atomic.Int32
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "delete" {
				deletes.Add(1)
			}
		}))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/cancelstall/sem"
	sa, err := semaphore.New(ca, path, 1)
	require.NoError(t, err)
	sb, err := semaphore.New(cb, path, 1)
	require.NoError(t, err)
	ctx := testutil.Context(t, 60*time.Second)

	lb, err := sb.Acquire(ctx)
	require.NoError(t, err)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make(chan error, 1)
	go func() { _, err := sa.Acquire(actx); res <- err }()
	require.Eventually(t, func() bool { // A's lease node is there: it waits for room
		kids, err := sb.Participants(ctx)
		return err == nil && len(kids) == 2
	}, 20*time.Second, 20*time.Millisecond, "A does not wait for a lease")

	proxy.Stall()
	cancel()
	select {
	case err := <-res:
		require.ErrorIs(t, err, context.Canceled)
	case <-ctx.Done():
		t.Fatal("the cancelled Acquire did not return")
	}
	require.Zero(t, deletes.Load(), "the cancelled Acquire waited for a delete on the stalled connection before it returned")

	proxy.Heal()
	require.Eventually(t, func() bool {
		kids, err := sb.Participants(ctx)
		return err == nil && len(kids) == 1
	}, 20*time.Second, 20*time.Millisecond, "the cancelled Acquire's lease node is left")
	require.NoError(t, lb.Release(ctx))
	for _, c := range []*framework.Client{ca, cb} {
		require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	}
	testutil.RequireNoChildren(t, srv.ConnectString(), path+"/leases")
	testutil.RequireNoChildren(t, srv.ConnectString(), path+"/locks")
}
