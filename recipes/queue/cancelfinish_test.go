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
// is stalled still tries to finish the removal (bounded by the clean-up timeout: a
// consumer stopped on purpose must not leave its last item to be delivered twice), then
// returns an error that matches both its context's error and ErrNotRemoved. Before, the
// error did not match the context's (the cancellation fuzzer's queue-consume-one-free:
// "a cancelled queue-consume-one-free returned queue: item handled but not removed…, not
// the context's error"). Once the connection is back, no lock node is left, and the item
// is either removed (the held transaction applied) or given back.
func TestConsumeOneCancelledDuringRemoval(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var stallOnMulti atomic.Bool
	stalled := make(chan struct{})
	a := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(4*time.Second), // the stalled removal ends with the session, soon
		framework.WithRequestHook(func(op string) {
			if op == "multi" && stallOnMulti.CompareAndSwap(true, false) {
				proxy.Stall() // the removal goes into the stall
				close(stalled)
			}
		}))
	b := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path, locks = "/cancelfinish/q", "/cancelfinish/locks"
	t.Cleanup(func() { _ = b.Delete(context.Background(), "/cancelfinish", framework.WithChildren()) }) // the server is the package's
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
	// Bounded by its clean-up steps (10 s each), while the proxy is still stalled.
	err = testutil.Result(t, done, 60*time.Second, "the cancelled ConsumeOne, its removal stalled")
	proxy.Heal()
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled, "the context's error")
	assert.ErrorIs(t, err, queue.ErrNotRemoved, "the handler ran and the item is not known to be removed")
	var nre *queue.NotRemovedError
	assert.True(t, errors.As(err, &nre), "a *NotRemovedError naming the item")

	require.NoError(t, a.WaitGuaranteedDeletes(ctx))
	items, _, err := b.Children(ctx, path)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(items), 1, "the item is removed, or given back: %v", items)
	kids, _, err := b.Children(ctx, locks)
	if !errors.Is(err, framework.ErrNoNode) {
		require.NoError(t, err)
	}
	assert.Empty(t, kids, "the lock node went with the item")
}
