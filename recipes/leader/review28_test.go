package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// Selector.Close while the selector's lock node is being created (the create applied by
// the server, its reply held) must not return with the node still there: Close's doc says
// it waits "for the node to be deleted". The Latch got this in issue 28.21; the Selector
// takes its node through mutex.Acquire, whose create is given up when Close cancels the
// run context, and Close then returns at once.
func TestReview28SelectorCloseDuringAcquireLeavesNothing(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/leader/review28-selector-close-during-acquire"
	_, err := c.Create(ctx, path, nil, framework.WithParents()) // so that the next create is the lock node's
	require.NoError(t, err)

	s, err := leader.NewSelector(c, path, "a", func(ctx context.Context) error { <-ctx.Done(); return nil })
	require.NoError(t, err)
	proxy.HoldReplies()
	require.NoError(t, s.Start(context.Background()))
	require.Eventually(t, func() bool {
		return len(testutil.Children(t, srv.ConnectString(), path)) == 1
	}, 20*time.Second, 10*time.Millisecond, "the selector's create did not reach the server")

	closed := testutil.Go(ctx, func(context.Context) error { return s.Close() })
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
		require.Empty(t, left, "Close returned (%v) while the selector's lock node (create applied, reply held) is still there", closeErr)
	} else {
		proxy.Heal()
		closeErr = testutil.Result(t, closed, 30*time.Second, "Close")
		require.Empty(t, testutil.Children(t, srv.ConnectString(), path), "Close returned with the selector's lock node still there")
	}
	require.NoError(t, closeErr)
	assertNoChildren(t, srv.ConnectString(), path, c)
}
