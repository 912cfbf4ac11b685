package mutex_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// An Acquire cancelled while its connection is stalled returns at once, leaving the
// delete of its node to the client's background worker; it does not wait for the delete
// until the cleanup's own bound (10 s). No request can be answered while the proxy
// stalls, and the connection is not given up for 40 s (2/3 of the session timeout): so
// any delete that completed before Acquire returned was waited for, which is the defect.
// Once the proxy heals, the worker deletes the node.
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
	const path = "/cancelstall/lock"
	ma, mb := newMutex(t, ca, path), newMutex(t, cb, path)
	ctx := testutil.Context(t, 60*time.Second)

	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := goAcquire(actx, ma)
	testutil.WaitParticipants(t, mb, 2, 15*time.Second)

	proxy.Stall()
	cancel()
	select {
	case r := <-res:
		require.ErrorIs(t, r.err, context.Canceled)
	case <-ctx.Done():
		t.Fatal("the cancelled Acquire did not return")
	}
	require.Zero(t, deletes.Load(), "the cancelled Acquire waited for a delete on the stalled connection before it returned")

	proxy.Heal()
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	require.Equal(t, []string{framework.NodeName(lb.Node())}, testutil.Children(t, srv.ConnectString(), path),
		"the cancelled Acquire's node is deleted once the connection is back")
	require.NoError(t, lb.Release(ctx))
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}
