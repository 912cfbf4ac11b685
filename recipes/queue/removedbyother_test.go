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

// lostAnswerHook returns a request hook that, armed, acts as the removal's transaction
// ("multi") goes out: someone without the lock deletes the item first (so the
// transaction, which deletes the item and the lock node together, cannot be applied),
// and the transaction's answer is lost with the connection once it reached the server.
func lostAnswerHook(t *testing.T, proxy **zktest.Proxy, other **framework.Client, item *string, armed *atomic.Bool) func(string) {
	return func(op string) {
		if op != "multi" || !armed.CompareAndSwap(true, false) {
			return
		}
		_ = (*other).Delete(context.Background(), *item, framework.WithVersion(-1))
		p := *proxy
		n := p.Forwarded()
		p.HoldReplies()
		go func() {
			for p.Forwarded() <= n {
				time.Sleep(time.Millisecond)
			}
			p.DropConnections()
			p.Heal()
		}()
	}
}

// IDQueue.Remove with a lock path counts only the items it removed: when its
// transaction's answer was lost and the item is then found gone while its lock node is
// still there (the transaction deletes both or neither), the item was removed by someone
// else, and Remove does not count it (nor claim it).
func TestIDQueueRemoveLostAnswerItemRemovedByOtherNotCounted(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	var proxy *zktest.Proxy
	var other *framework.Client
	var item string
	var armed atomic.Bool
	proxy = zktest.NewProxy(t, srv.ConnectString())
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithRequestHook(lostAnswerHook(t, &proxy, &other, &item, &armed)))
	other = testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/removedbyother")
	t.Cleanup(func() { _ = other.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.NewID(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	item, err = q.Put(ctx, "x", "order-1")
	require.NoError(t, err)

	armed.Store(true)
	n, err := q.Remove(ctx, "order-1")
	t.Logf("Remove: %d %v", n, err)
	require.False(t, armed.Load(), "the removal's transaction never went out")
	st, serr := other.Exists(ctx, item)
	require.NoError(t, serr)
	require.Nil(t, st, "the item is gone (deleted by the other client)")
	assert.True(t, n == 0 || errors.Is(err, queue.ErrMaybeGone),
		"Remove counted an item someone else removed (its own transaction, answer lost, was not applied: its lock node was still there): %d, %v", n, err)
}

// A consumer whose handler failed reports its item requeued only when the requeue was
// applied: when the requeue's answer was lost and the item is then found gone while the
// consumer's lock node is still there (the transaction deletes both or neither), someone
// else removed the item and nothing was requeued. Claiming Requeued then tells the
// caller the item will be delivered again when it is gone.
func TestRequeueLostAnswerItemRemovedByOtherNotReportedRequeued(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	var proxy *zktest.Proxy
	var other *framework.Client
	var item string
	var armed atomic.Bool
	proxy = zktest.NewProxy(t, srv.ConnectString())
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithRequestHook(lostAnswerHook(t, &proxy, &other, &item, &armed)))
	other = testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/requeuebyother")
	t.Cleanup(func() { _ = other.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	item, err = q.Put(ctx, "x")
	require.NoError(t, err)

	err = q.ConsumeOne(ctx, func(context.Context, string) error {
		armed.Store(true)
		return errors.New("job failed")
	})
	t.Logf("ConsumeOne: %v", err)
	require.False(t, armed.Load(), "the requeue's transaction never went out")
	var he *queue.HandlerError
	require.ErrorAs(t, err, &he)
	names, ierr := q.Items(ctx)
	require.NoError(t, ierr)
	assert.False(t, he.Requeued && len(names) == 0,
		"the item was reported requeued (Requeued %v, RemovedByOther %v, OutcomeUnknown %v) but nothing was requeued: the queue is empty", he.Requeued, he.RemovedByOther, he.OutcomeUnknown)
}
