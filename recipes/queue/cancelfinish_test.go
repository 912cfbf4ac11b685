package queue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/zktest"
)

// A ConsumeOne (with a lock path) whose context ends while its removal of a handled item
// is stalled returns at once, with an error that matches both its context's error and
// ErrNotRemoved (the handler ran; whether the item goes is not known yet). The removal
// goes on in the background (WaitGuaranteedDeletes waits for it) and removes the item and
// the lock node once the connection is back. Before, the call held on for its clean-up's
// 10 s bound (and longer when the session ended meanwhile: 40 s in the cancellation
// fuzzer) and returned an error that did not match the context's.
func TestConsumeOneCancelledDuringRemovalReturnsAtOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var stallOnMulti atomic.Bool
	stalled := make(chan struct{})
	a := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(60*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "multi" && stallOnMulti.CompareAndSwap(true, false) {
				proxy.Stall() // the removal goes into the stall
				close(stalled)
			}
		}))
	b := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path, locks = "/cancelfinish/q", "/cancelfinish/locks"
	qa, err := queue.New(a, path, queue.String{}, queue.WithLockPath(locks))
	require.NoError(t, err)
	_, err = qa.Put(ctx, "x")
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stallOnMulti.Store(true)
	done := testutil.Go(cctx, func(ctx context.Context) error {
		return qa.ConsumeOne(ctx, func(context.Context, string) error { return nil })
	})
	testutil.WaitClosed(t, stalled, 20*time.Second, "the removal is sent")
	cancel()
	// Bounded wait, not a timing assertion: the call must return while the proxy is still
	// stalled (it is healed only after).
	err = testutil.Result(t, done, 30*time.Second, "the cancelled ConsumeOne, its removal stalled")
	proxy.Heal()
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled, "the context's error")
	assert.ErrorIs(t, err, queue.ErrNotRemoved, "the handler ran and the item is not known to be removed")
	var nre *queue.NotRemovedError
	assert.True(t, errors.As(err, &nre), "a *NotRemovedError naming the item")

	require.NoError(t, a.WaitGuaranteedDeletes(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), path)
	kids, _, err := b.Children(ctx, locks)
	if !errors.Is(err, framework.ErrNoNode) {
		require.NoError(t, err)
	}
	assert.Empty(t, kids, "the lock node went with the item")
}
