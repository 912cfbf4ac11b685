package doublebarrier_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// An Enter cancelled while its connection is stalled tries to delete its member node for
// a bounded time (2 s) only, then returns and leaves the delete to the client's background
// worker, instead of waiting for it until the cleanup's own bound (10 s). No request can
// be answered while the proxy stalls, and the connection is not given up for 40 s (2/3 of
// the session timeout). Its error says that the node may still be there. Once the proxy
// heals the node goes, and the barrier is usable again at once.
func TestCancelledEnterOnStalledConnectionReturnsWithinBound(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var deletes atomic.Int32
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "delete" || r.Op == "multi" { // a delete of the node, alone or in a transaction
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
	start := time.Now()
	cancel()
	select {
	case err := <-entered:
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, framework.ErrUnknownOutcome)
	case <-ctx.Done():
		t.Fatal("the cancelled Enter did not return")
	}
	require.Less(t, time.Since(start), 8*time.Second, "the cancelled Enter waited for its delete past its bound")
	require.NotZero(t, deletes.Load(), "the cancelled Enter did not try to delete its node")

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

// An Enter cancelled while its connection is stalled cannot withdraw its member node: the
// node stays, and another member counts it and goes in. Enter then does not say that the
// member is out: its error says the outcome is unknown (the member may be counted), beside
// the context's error.
func TestCancelledEnterWhoseNodeStaysSaysItMayBeCounted(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second))
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/maybecounted/barrier"
	a := newMember(t, c, path, 2)

	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	entered := make(chan error, 1)
	go func() { entered <- a.Enter(ectx) }()
	waitChildren(t, srv.ConnectString(), path, 1)

	proxy.Stall()
	cancel()
	var err error
	select {
	case err = <-entered:
	case <-ctx.Done():
		t.Fatal("the cancelled Enter did not return")
	}
	require.ErrorIs(t, err, context.Canceled)

	// Nothing passes the stalled proxy: a's node is still there, and b counts it.
	require.Len(t, testutil.Children(t, srv.ConnectString(), path), 1, "a's member node is gone")
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	b := newMember(t, other, path, 2)
	require.NoError(t, b.Enter(ctx), "b did not go in with a's node")
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome,
		"a's Enter said the member is out (%v) while its node was there and b went in by it", err)

	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.NoError(t, b.Leave(ctx))
	assertNoMembers(t, srv.ConnectString(), path, c, other)
}
