package queue_test

import (
	"context"
	"fmt"
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

// r28Rig is a consumer's client behind a proxy whose next request of a given kind runs a
// function of the test's as it goes out, and a peer straight to the server.
type r28Rig struct {
	proxy   *zktest.Proxy
	c, peer *framework.Client
	hooks   map[string]*atomic.Pointer[func()]
	base    string
}

func newR28Rig(t *testing.T, opts ...framework.Option) *r28Rig {
	t.Helper()
	srv := server(t)
	r := &r28Rig{
		proxy: zktest.NewProxy(t, srv.ConnectString()),
		base:  fmt.Sprintf("/removal/%d", time.Now().UnixNano()),
		hooks: map[string]*atomic.Pointer[func()]{},
	}
	for _, op := range []string{"create", "getData", "delete", "multi", "exists"} {
		r.hooks[op] = new(atomic.Pointer[func()])
	}
	all := append([]framework.Option{
		framework.WithDialer(r.proxy.Dialer()),
		framework.WithSessionTimeout(60 * time.Second), // replies held for a while: no read timeout meanwhile
		framework.WithRequestHook(func(op string) {
			if h := r.hooks[op]; h != nil {
				if f := h.Swap(nil); f != nil {
					(*f)()
				}
			}
		}),
	}, opts...)
	r.c = testutil.ConnectFailFast(t, srv.ConnectString(), all...)
	r.peer = testutil.Connect(t, srv.ConnectString())
	t.Cleanup(func() { _ = r.peer.Delete(context.Background(), r.base, framework.WithChildren()) })
	return r
}

// on runs f as the next request op goes out.
func (r *r28Rig) on(op string, f func()) { r.hooks[op].Store(&f) }

// A ConsumeOne with a lock path whose context ends while the connection is stalled (its
// lock node's create applied, the answer held; or the item's read held once the lock
// was made) must return about when its context ends: the take's only documented wait
// past its context is the 10 s for a take's delete (no lock path) and the clean-up of a
// handled item's removal. It returned only when the clean-up timeout (30 s) ran out:
// lock() waits for the given-up create (creates.Wait, 30 s) and then unlock() reads the
// lock node on a fresh 30 s context, both synchronously.
func TestLockedTakeCancelledOnStalledConnectionReturnsWithItsContext(t *testing.T) {
	leakcheck.Check(t)
	for _, held := range []string{"create", "getData"} {
		t.Run(held, func(t *testing.T) {
			r := newR28Rig(t)
			ctx := testutil.Context(t, 3*time.Minute)
			q, err := queue.New(r.c, r.base+"/q", queue.String{}, queue.WithLockPath(r.base+"/locks"))
			require.NoError(t, err)
			// Warm up: the queue and lock paths exist and are known to the consumer.
			_, err = q.Put(ctx, "warm")
			require.NoError(t, err)
			require.Equal(t, []string{"warm"}, consumeN(t, ctx, q.ConsumeOne, 1))
			p, err := q.Put(ctx, "x")
			require.NoError(t, err)
			name := p[len(r.base+"/q/"):]

			sent := make(chan struct{})
			stall := func() { r.proxy.HoldReplies(); close(sent) }
			switch held {
			case "create":
				r.on("create", stall)
			case "getData":
				r.on("create", func() { r.on("getData", stall) }) // the read after the lock node's create
			}
			t.Cleanup(r.proxy.Heal)
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var handled atomic.Int32
			done := testutil.Go(cctx, func(ctx context.Context) error {
				return q.ConsumeOne(ctx, func(context.Context, string) error { handled.Add(1); return nil })
			})
			testutil.WaitClosed(t, sent, 20*time.Second, "the request goes out")
			require.Eventually(t, func() bool {
				st, err := r.peer.Exists(ctx, r.base+"/locks/"+name)
				return err == nil && st != nil
			}, 20*time.Second, 5*time.Millisecond, "the lock node's create is applied")
			time.Sleep(200 * time.Millisecond)
			cancel()
			start := time.Now()
			err = testutil.Result(t, done, 10*time.Second, "ConsumeOne (lock path) cancelled on a stalled connection")
			t.Logf("returned %v after its context ended: %v", time.Since(start), err)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Zero(t, handled.Load())
			r.proxy.Heal()
		})
	}
}

// Names are reused (REFERENCE "Consuming and owning"): the queue path deleted and made
// again between a consumer's last look at its item and the delete that removes it, a new
// item at the same name (sequence numbers start again, version 0 like the old one) is
// deleted by that removal: the new item is gone, never delivered, and the consumer
// returns nil. With a lock path the window is between finish's exists and its
// transaction (core.go finish: "only a delete and re-create within that round trip
// could slip through"); without one, between process's GetData and takeDelete
// (framework.AsRead says the same). doc.go promises neither loss. The request hook makes
// the moment: the queue is made again as the removal goes out.
func TestRemovalRacingNameReuseSaysTheItemMayBeGone(t *testing.T) {
	leakcheck.Check(t)
	for _, locked := range []bool{true, false} {
		t.Run(fmt.Sprintf("lockPath=%v", locked), func(t *testing.T) {
			r := newR28Rig(t)
			ctx := testutil.Context(t, time.Minute)
			var opts []queue.Option
			op := "delete"
			if locked {
				opts = append(opts, queue.WithLockPath(r.base+"/locks"))
				op = "multi"
			}
			q, err := queue.New(r.c, r.base+"/q", queue.String{}, opts...)
			require.NoError(t, err)
			pq, err := queue.New(r.peer, r.base+"/q", queue.String{}, opts...)
			require.NoError(t, err)
			old, err := pq.Put(ctx, "old")
			require.NoError(t, err)
			var reused string
			var reuseErr error
			r.on(op, func() {
				if reuseErr = r.peer.Delete(ctx, r.base+"/q", framework.WithChildren()); reuseErr == nil {
					reused, reuseErr = pq.Put(ctx, "new")
				}
			})
			var got collector
			err = q.ConsumeOne(ctx, got.handle)
			require.NoError(t, reuseErr)
			require.Equal(t, old, reused, "the new item reuses the old item's name")
			names, lerr := pq.Items(ctx)
			require.NoError(t, lerr)
			if len(names) == 1 {
				return // the new item is still there
			}
			require.Error(t, err, "the new item %s (put after the queue was made again) is gone, never delivered (handler got %v), and ConsumeOne returned nil", reused, got.items())
			assert.ErrorIs(t, err, queue.ErrMaybeGone, "an error that says an item may be gone")
		})
	}
}

// ErrorMode Requeue's back-off "is the consumer's own (other consumers, in this process or
// others, may take the requeued item at once)" (options.go, README). Two consumers on one
// Queue value (a worker pool: several goroutines calling Consume/ConsumeOne on it, as
// "safe for concurrent use" allows) share it: the back-off lives in the queue value
// (base.holdUntil), so one worker's failing item holds every other worker back, up to 5 s
// per take.
func TestRequeueBackoffHoldsNoOtherConsumerOfTheSameQueue(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := fmt.Sprintf("/removalbackoff/%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	_, err = q.Put(ctx, "bad")
	require.NoError(t, err)
	// Worker A fails the item six times in a row: its next take waits 3.2 s.
	for range 6 {
		err := q.ConsumeOne(ctx, func(context.Context, string) error { return fmt.Errorf("job failed") })
		var he *queue.HandlerError
		require.ErrorAs(t, err, &he)
		require.True(t, he.Requeued)
	}
	_, err = q.Put(ctx, "good")
	require.NoError(t, err)
	// Worker B, another consumer of the same queue, takes an item at once.
	bctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var got collector
	err = q.ConsumeOne(bctx, got.handle)
	require.NoError(t, err, "another consumer of the queue is held back by worker A's back-off")
	assert.Len(t, got.items(), 1)
}

// A consumer whose context ends while it removes a handled item "still finishes the
// removal (bounded by the clean-up timeout)" (doc.go; 30 s). On a stalled connection it
// returned after twice that: finish gives up at the clean-up timeout, then gives the item
// back through unlock, which reads the lock node on a fresh clean-up timeout of its own.
func TestCancelledRemovalOnStalledConnectionKeepsTheCleanupBound(t *testing.T) {
	leakcheck.Check(t)
	r := newR28Rig(t)
	ctx := testutil.Context(t, 3*time.Minute)
	q, err := queue.New(r.c, r.base+"/q", queue.String{}, queue.WithLockPath(r.base+"/locks"))
	require.NoError(t, err)
	_, err = q.Put(ctx, "x")
	require.NoError(t, err)
	t.Cleanup(r.proxy.Heal)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ended atomic.Pointer[time.Time]
	done := testutil.Go(cctx, func(ctx context.Context) error {
		return q.ConsumeOne(ctx, func(context.Context, string) error {
			// The handler is done; the connection stalls as the removal starts (its first
			// request, the exists before the transaction), and the consumer is stopped.
			r.on("exists", func() { r.proxy.HoldReplies() })
			now := time.Now()
			ended.Store(&now)
			cancel()
			return nil
		})
	})
	err = testutil.Result(t, done, 45*time.Second, "ConsumeOne cancelled during the removal of a handled item on a stalled connection (the clean-up timeout is 30 s)")
	took := time.Since(*ended.Load())
	r.proxy.Heal()
	assert.ErrorIs(t, err, queue.ErrNotRemoved)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, took, 35*time.Second, "returned %v after its context ended: more than the clean-up timeout", took)
}

// IDQueue.Remove (no lock path) "returns how many it removed". Its delete is held in the
// network, a consumer takes the item meanwhile, the connection drops: the resent delete
// is answered NoNode (the consumer's doing) and Remove counts the item as removed by it,
// with no error: a result the server did not give (the resent delete of a take, seen
// from Remove). Remove must not count it.
func TestIDQueueRemoveDoesNotCountAResentNoNodeAsRemoved(t *testing.T) {
	leakcheck.Check(t)
	r := newR28Rig(t)
	ctx := testutil.Context(t, 2*time.Minute)
	q, err := queue.NewID(r.c, r.base+"/q", queue.String{})
	require.NoError(t, err)
	pq, err := queue.NewID(r.peer, r.base+"/q", queue.String{})
	require.NoError(t, err)
	_, err = pq.Put(ctx, "x", "job-1")
	require.NoError(t, err)
	sent := make(chan struct{})
	r.on("delete", func() { r.proxy.StallToServers(); close(sent) })
	t.Cleanup(r.proxy.Heal)
	type res struct {
		n   int
		err error
	}
	out := make(chan res, 1)
	go func() {
		n, err := q.Remove(ctx, "job-1")
		out <- res{n, err}
	}()
	testutil.WaitClosed(t, sent, 20*time.Second, "Remove's delete goes out")
	var got collector
	require.NoError(t, pq.ConsumeOne(ctx, got.handle), "a consumer takes the item")
	require.Equal(t, []string{"x"}, got.items())
	r.proxy.DropConnections() // Remove's delete, held, goes with the connection
	r.proxy.Heal()
	var rr res
	select {
	case rr = <-out:
	case <-time.After(60 * time.Second):
		t.Fatal("Remove: no result after 60s")
	}
	if rr.err == nil {
		assert.Zero(t, rr.n, "Remove says it removed the item a consumer took (and delivered)")
	} else {
		assert.ErrorIs(t, rr.err, framework.ErrUnknownOutcome, "an error, if any, says the outcome is unknown")
	}
}
