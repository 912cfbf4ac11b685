package leader_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// Latch.Close while Start's create is in flight (applied by the server, its reply held)
// must not return with the latch node still there: it waits for Start to
// resolve (Start then deletes the node it made) or leaves nothing in some other way.
func TestLatchCloseDuringStartLeavesNothing(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/leader/close-during-start"
	_, err := c.Create(ctx, path, nil, framework.WithParents()) // so that the next create is the latch node's
	require.NoError(t, err)

	l, err := leader.NewLatch(c, path, "a")
	require.NoError(t, err)
	proxy.HoldReplies()
	started := testutil.Go(ctx, l.Start)
	var kids []string
	require.Eventually(t, func() bool {
		kids = testutil.Children(t, srv.ConnectString(), path)
		return len(kids) == 1
	}, 20*time.Second, 10*time.Millisecond, "Start's create did not reach the server")

	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	var closeErr error
	returned := false
	select {
	case closeErr = <-closed:
		returned = true
	case <-time.After(time.Second): // Close waits for Start: let the create's reply through
	}
	if returned {
		left := testutil.Children(t, srv.ConnectString(), path)
		proxy.Heal()
		require.Empty(t, left, "Close returned (%v) while the latch node made by Start's create (reply held) is still there", closeErr)
	} else {
		proxy.Heal()
		closeErr = testutil.Result(t, closed, 30*time.Second, "Close")
		require.Empty(t, testutil.Children(t, srv.ConnectString(), path), "Close returned with the latch node made by Start still there")
	}
	require.NoError(t, closeErr)
	require.ErrorIs(t, testutil.Result(t, started, 30*time.Second, "Start"), leader.ErrClosed)
	require.NoError(t, l.Close(), "Close again")
}

// Close's wait for an in-flight Start is bounded: with the create's reply
// held for good, Close returns after its clean-up bound (10 s) with an error saying the
// create did not resolve; once the reply comes, the node it made is deleted.
func TestLatchCloseDuringStartIsBounded(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second))
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/leader/close-during-start-bounded"
	_, err := c.Create(ctx, path, nil, framework.WithParents())
	require.NoError(t, err)

	l, err := leader.NewLatch(c, path, "a")
	require.NoError(t, err)
	proxy.HoldReplies()
	started := testutil.Go(ctx, l.Start)
	require.Eventually(t, func() bool {
		return len(testutil.Children(t, srv.ConnectString(), path)) == 1
	}, 20*time.Second, 10*time.Millisecond, "Start's create did not reach the server")

	begin := time.Now()
	closeErr := testutil.Result(t, testutil.Go(ctx, func(context.Context) error { return l.Close() }), 30*time.Second, "Close")
	took := time.Since(begin)
	require.Error(t, closeErr, "Close gave the create up: it must say the node may remain for a while")
	require.Contains(t, closeErr.Error(), "did not resolve")
	require.GreaterOrEqual(t, took, 9*time.Second, "Close waited for its bound")
	require.ErrorIs(t, testutil.Result(t, started, 10*time.Second, "Start"), leader.ErrClosed)
	proxy.Heal()
	assertNoChildren(t, srv.ConnectString(), path, c)
}

// The same for the latch's own re-create of its node (after its node was deleted by
// someone else): Close while that create is applied and its reply held leaves nothing.
func TestLatchCloseDuringRecreateLeavesNothing(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var (
		mu    sync.Mutex
		armed bool
	)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second),
		framework.WithRequestHook(func(op string) {
			mu.Lock()
			defer mu.Unlock()
			if armed && op == "create" {
				armed = false
				proxy.HoldReplies() // before the create goes out
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/leader/close-during-recreate"
	l := startLatch(t, c, path, "a")
	await(t, l, 20*time.Second, "a leads")
	first := l.Node()
	require.NotEmpty(t, first)

	mu.Lock()
	armed = true
	mu.Unlock()
	require.NoError(t, other.Delete(ctx, first, framework.WithVersion(-1)))
	var kids []string
	require.Eventually(t, func() bool {
		kids = testutil.Children(t, srv.ConnectString(), path)
		return len(kids) == 1 && kids[0] != framework.NodeName(first)
	}, 20*time.Second, 10*time.Millisecond, "the latch did not make its node again")

	closed := testutil.Go(ctx, func(context.Context) error { return l.Close() })
	var closeErr error
	returned := false
	select {
	case closeErr = <-closed:
		returned = true
	case <-time.After(time.Second): // Close waits for the create: let its reply through
	}
	if returned {
		left := testutil.Children(t, srv.ConnectString(), path)
		proxy.Heal()
		require.Empty(t, left, "Close returned (%v) while the latch node made again (reply held) is still there", closeErr)
	} else {
		proxy.Heal()
		closeErr = testutil.Result(t, closed, 30*time.Second, "Close")
		require.Empty(t, testutil.Children(t, srv.ConnectString(), path), "Close returned with the latch node made again still there")
	}
	require.NoError(t, closeErr)
}
