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

// IDQueue.Remove without a lock path returns when its context ends (its doc: a removal
// whose context ended while it was in flight is not counted, and Remove stops there with
// ErrMaybeGone; "with a lock path too, Remove returns when ctx ends"): here its delete
// reached the server, its answer is held, and the context ends.
func TestIDQueueRemoveWithoutLockPathReturnsWhenCtxEnds(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed atomic.Bool
	var cancelRemove atomic.Pointer[context.CancelFunc]
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(40*time.Second),
		framework.WithRequestHook(func(op string) {
			if op != "delete" || !armed.CompareAndSwap(true, false) {
				return
			}
			n := proxy.Forwarded()
			proxy.HoldReplies()
			go func() {
				for proxy.Forwarded() <= n {
					time.Sleep(time.Millisecond)
				}
				(*cancelRemove.Load())() // the delete reached the server: the context ends
			}()
		}))
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/removebyctx")
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.NewID(c, base+"/q", queue.String{})
	require.NoError(t, err)
	_, err = q.Put(ctx, "x", "order-1")
	require.NoError(t, err)

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ended atomic.Int64
	stop := context.AfterFunc(rctx, func() { ended.Store(time.Now().UnixNano()) })
	defer stop()
	cancelRemove.Store(&cancel)
	armed.Store(true)
	n, err := q.Remove(rctx, "order-1")
	returned := time.Now()
	proxy.Heal()
	require.NotZero(t, ended.Load(), "the context never ended")
	late := returned.Sub(time.Unix(0, ended.Load()))
	t.Logf("Remove: %d, %v, %v after its context ended", n, err, late.Round(time.Millisecond))
	assert.True(t, errors.Is(err, queue.ErrMaybeGone) || errors.Is(err, context.Canceled), "Remove: %v", err)
	assert.Less(t, late, 2*time.Second, "Remove (no lock path) waited %v after its context ended", late.Round(time.Millisecond))
}
