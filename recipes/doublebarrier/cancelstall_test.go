package doublebarrier_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// An Enter cancelled while its connection is stalled returns at once and leaves the
// delete of its member node to the client's background worker, instead of waiting for the
// delete until the cleanup's own bound (10 s). No request can be answered while the proxy
// stalls, and the connection is not given up for 40 s (2/3 of the session timeout): any
// delete that completed before Enter returned was waited for. Once the proxy heals the
// node goes, and the barrier is usable again at once.
func TestCancelledEnterOnStalledConnectionReturnsAtOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var deletes atomic.Int32
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "delete" {
				deletes.Add(1)
			}
		}))
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/cancelstall/barrier"
	d, err := doublebarrier.New(c, path, 2)
	require.NoError(t, err)

	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	entered := make(chan error, 1)
	go func() { entered <- d.Enter(ectx) }()
	require.Eventually(t, func() bool { return len(testutil.Children(t, srv.ConnectString(), path)) == 1 },
		20*time.Second, 20*time.Millisecond, "Enter did not make its member node")

	proxy.Stall()
	cancel()
	select {
	case err := <-entered:
		require.ErrorIs(t, err, context.Canceled)
	case <-ctx.Done():
		t.Fatal("the cancelled Enter did not return")
	}
	require.Zero(t, deletes.Load(), "the cancelled Enter waited for a delete on the stalled connection before it returned")

	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.Empty(t, testutil.Children(t, srv.ConnectString(), path), "the member node is deleted once the connection is back")

	// Usable again at once: two members enter and leave.
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	d2, err := doublebarrier.New(other, path, 2)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		if err := d2.Enter(ctx); err != nil {
			done <- err
			return
		}
		done <- d2.Leave(ctx)
	}()
	require.NoError(t, d.Enter(ctx))
	require.NoError(t, d.Leave(ctx))
	require.NoError(t, <-done)
}
