package queue_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// An item given up on (WithMaxAttempts) whose node was removed by someone else while its
// handler ran (an operator, IDQueue.Remove without a lock path, a Curator consumer without
// one) is not moved: the consumer finds it gone before it sends the move, and sends
// nothing. No connection was lost, no answer went missing: the consumer knows the move
// was not applied. It must not report DeadLettered (nor, for a plain requeue, Requeued):
// the dead-letter path is empty, and a caller that trusts DeadLettered looks there for the
// item in vain.
func TestGivenUpItemRemovedMeanwhileNotReportedDeadLettered(t *testing.T) {
	leakcheck.Check(t)
	for _, mode := range []string{"dead-letter", "requeue"} {
		t.Run(mode, func(t *testing.T) {
			srv := server(t)
			c := testutil.ConnectFailFast(t, srv.ConnectString())
			peer := testutil.Connect(t, srv.ConnectString())
			ctx := testutil.Context(t, time.Minute)
			base := uniq("/dead-gone")
			t.Cleanup(func() { _ = peer.Delete(context.Background(), base, framework.WithChildren()) })
			opts := []queue.Option{queue.WithLockPath(base + "/locks")}
			if mode == "dead-letter" {
				opts = append(opts, queue.WithMaxAttempts(1), queue.WithDeadLetterPath(base+"/dead"))
			}
			q, err := queue.New(c, base+"/q", queue.String{}, opts...)
			require.NoError(t, err)
			node, err := q.Put(ctx, "bad")
			require.NoError(t, err)
			err = q.ConsumeOne(ctx, func(ctx context.Context, _ string) error {
				// Removed by someone without the lock while the handler runs.
				require.NoError(t, peer.Delete(ctx, node))
				return errJob
			})
			var he *queue.HandlerError
			require.ErrorAs(t, err, &he)
			t.Logf("ConsumeOne: %v", err)
			assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/q"), "the item is gone from the queue")
			if mode == "dead-letter" {
				require.ErrorIs(t, err, queue.ErrAttemptsExhausted)
				assert.Empty(t, nodesWith(t, peer, base+"/dead", nil), "nothing was moved to the dead-letter path")
				assert.False(t, he.DeadLettered, "DeadLettered reported for a move never sent: %v", err)
			} else {
				assert.False(t, he.Requeued, "Requeued reported for a requeue never sent: %v", err)
			}
		})
	}
}

// JSON[T]'s promise: "bytes that are not one JSON value of T's shape (another writer's,
// say) are refused", and the consumer reports the node as a *BadItemError. The JSON
// literal null is not a job (a struct): another writer's null (Jackson writes a null
// reference as "null") must be refused, not handed to the handler as a zero job, which a
// handler cannot tell from a real job{ID: 0}.
func TestJSONNullNotTakenForAZeroItem(t *testing.T) {
	leakcheck.Check(t)
	_, err := queue.JSON[job]{}.Deserialize([]byte("null"))
	assert.Error(t, err, "null is not a queue_test.job")

	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	path := uniq("/dead-json") + "/q"
	t.Cleanup(func() { _ = c.Delete(context.Background(), path, framework.WithChildren()) })
	raw, err := queue.New(c, path, queue.String{})
	require.NoError(t, err)
	_, err = raw.Put(ctx, "null") // another writer's item
	require.NoError(t, err)
	q, err := queue.New(c, path, queue.JSON[job]{})
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var got []job
	err = q.ConsumeOne(short, func(_ context.Context, j job) error { got = append(got, j); return nil })
	assert.Empty(t, got, "the handler got a job that was never put")
	assert.ErrorIs(t, err, queue.ErrNotAnItem)
}

// finish abandons the move (or removal) "once the lock's session ends" by a connection
// state listener that cancels the transaction's context. Listeners are called one at a
// time, in order, on the client's goroutine (framework.AddListener: "a slow listener
// delays the next listener calls"), while the transaction's retry (framework's withRetry)
// waits only for the client to be connected again, in whatever session. So when the
// application's own listener is still busy with the Lost state, the transaction is sent
// again in the new session: it deletes the item node, which another consumer now holds,
// together with that consumer's lock node (DeleteOp(lock, -1)), and creates the item in
// the dead-letter path. The other consumer handles the item all the same and finishes it
// (found gone: "removed by someone without the lock"): the item is both handled and in
// the dead-letter queue, and another consumer's lock node was deleted.
func TestMoveResentInNewSessionSparesOthersLock(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed, stallOnMulti atomic.Bool
	var multis atomic.Int32
	resent := make(chan struct{})
	var resentOnce, blockOnce sync.Once
	policy, err := retry.NewBoundedExponentialBackoff(20*time.Millisecond, 200*time.Millisecond, 100)
	require.NoError(t, err)
	a := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(2*time.Second), framework.WithRetryPolicy(policy),
		framework.WithRequestHook(func(op string) {
			if op == "multi" && stallOnMulti.CompareAndSwap(true, false) {
				proxy.Stall() // A's move goes into the stall: it never reaches the server
			}
		}),
		framework.WithRequestObserver(func(ri framework.RequestInfo) {
			if ri.Op == "multi" && armed.Load() && multis.Add(1) == 2 {
				resentOnce.Do(func() { close(resent) })
			}
		}),
		// The application's listener: busy for a while with the Lost state (bounded
		// here: until A's transaction was sent again and answered, or 15 s).
		framework.WithStateListener(func(s framework.State) {
			if s == framework.Lost && armed.Load() {
				blockOnce.Do(func() {
					select {
					case <-resent:
					case <-time.After(15 * time.Second):
					}
				})
			}
		}))
	b := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)
	base := uniq("/dead-newsession")
	t.Cleanup(func() { _ = b.Delete(context.Background(), base, framework.WithChildren()) })
	opts := []queue.Option{queue.WithLockPath(base + "/locks"), queue.WithMaxAttempts(1),
		queue.WithDeadLetterPath(base + "/dead")}
	qa, err := queue.New(a, base+"/q", queue.String{}, opts...)
	require.NoError(t, err)
	qb, err := queue.New(b, base+"/q", queue.String{}, opts...)
	require.NoError(t, err)
	node, err := qa.Put(ctx, "x")
	require.NoError(t, err)
	lock := base + "/locks/" + framework.NodeName(node)

	armed.Store(true)
	stallOnMulti.Store(true)
	aDone := testutil.Go(ctx, func(ctx context.Context) error {
		return qa.ConsumeOne(ctx, func(context.Context, string) error { return errJob })
	})
	require.Eventually(t, func() bool { return !stallOnMulti.Load() }, 20*time.Second, 5*time.Millisecond,
		"A's handler failed and A sent the move")
	require.Eventually(t, func() bool {
		st, err := b.Exists(ctx, lock)
		return err == nil && st == nil
	}, 30*time.Second, 20*time.Millisecond, "A's lock node goes with its session")
	bIn, bRelease := make(chan struct{}), make(chan struct{})
	bDone := testutil.Go(ctx, func(ctx context.Context) error {
		return qb.ConsumeOne(ctx, func(context.Context, string) error {
			close(bIn)
			<-bRelease
			return nil
		})
	})
	testutil.WaitClosed(t, bIn, 20*time.Second, "B takes the item A's lock no longer guards")
	proxy.Heal()
	err = testutil.Result(t, aDone, 60*time.Second, "A's ConsumeOne")
	t.Logf("A: %v", err)
	assert.ErrorIs(t, err, queue.ErrNotRemoved)
	st, serr := b.Exists(ctx, lock)
	require.NoError(t, serr)
	assert.NotNil(t, st, "B's lock node is still there while B handles the item")
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/dead"),
		"the item B is handling is not in the dead-letter path")
	close(bRelease)
	require.NoError(t, testutil.Result(t, bDone, 30*time.Second, "B's ConsumeOne"))
}

// A move to the dead-letter path that the server applied but whose answer was lost with
// the session is reported as ErrNotRemoved (doc.go: "the item is then in the queue or in
// the dead-letter path, once"), joined with the *HandlerError. That HandlerError must not
// claim an outcome nobody knows: it has GaveUp set and DeadLettered clear, so its message
// says "left in the queue", while the item is in the dead-letter path (and not in the
// queue). A caller that logs or reads the error is told the wrong place.
func TestMoveAppliedAnswerLostWithSessionNotReportedLeftInQueue(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var holdOnMulti atomic.Bool
	policy, err := retry.NewBoundedExponentialBackoff(20*time.Millisecond, 200*time.Millisecond, 100)
	require.NoError(t, err)
	a := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(2*time.Second), framework.WithRetryPolicy(policy),
		framework.WithRequestHook(func(op string) {
			if op == "multi" && holdOnMulti.CompareAndSwap(true, false) {
				proxy.HoldReplies() // the move reaches the server; its answer does not come back
			}
		}))
	peer := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)
	base := uniq("/dead-lostanswer")
	t.Cleanup(func() { _ = peer.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(a, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"),
		queue.WithMaxAttempts(1), queue.WithDeadLetterPath(base+"/dead"))
	require.NoError(t, err)
	node, err := q.Put(ctx, "x")
	require.NoError(t, err)
	gen0 := a.Generation()
	holdOnMulti.Store(true)
	done := testutil.Go(ctx, func(ctx context.Context) error {
		return q.ConsumeOne(ctx, func(context.Context, string) error { return errJob })
	})
	require.Eventually(t, func() bool {
		st, err := peer.Exists(ctx, node)
		return err == nil && st == nil
	}, 20*time.Second, 5*time.Millisecond, "the move is applied")
	require.Eventually(t, func() bool { return a.Generation() != gen0 }, 30*time.Second, 20*time.Millisecond,
		"A's client gives its session up")
	proxy.Heal()
	err = testutil.Result(t, done, 60*time.Second, "ConsumeOne")
	t.Logf("ConsumeOne: %v", err)
	require.ErrorIs(t, err, queue.ErrNotRemoved)
	require.Len(t, testutil.Children(t, srv.ConnectString(), base+"/dead"), 1, "the item was moved")
	require.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/q"), "the item is not in the queue")
	var he *queue.HandlerError
	require.ErrorAs(t, err, &he)
	assert.NotContains(t, err.Error(), "left in the queue", "the error tells where the item is not")
}

// IDQueue.Remove "returns how many it removed". With a lock path it locks the item, reads
// it (there), and then removes it with the consumers' removal (finish), which reads it
// again; an item removed meanwhile by someone else (a Remove of another process without
// a lock path, a Curator consumer without one) is found gone there and finish returns
// nil ("removed by someone without the lock, or by us"): Remove counts it as removed
// although it removed nothing. (A request hook deletes the item, by a peer, just before
// finish's read goes out.)
func TestIDRemoveWithLockDoesNotCountAnItemRemovedByAnother(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	var exists atomic.Int32
	var onSecondExists atomic.Pointer[func()]
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op == "exists" && exists.Add(1) == 2 {
			if f := onSecondExists.Swap(nil); f != nil {
				(*f)()
			}
		}
	}))
	peer := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/dead-idremove")
	t.Cleanup(func() { _ = peer.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.NewID(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	node, err := q.Put(ctx, "x", "job-1")
	require.NoError(t, err)
	del := func() { require.NoError(t, peer.Delete(context.Background(), node)) }
	onSecondExists.Store(&del)
	exists.Store(0)
	n, err := q.Remove(ctx, "job-1")
	require.NoError(t, err)
	require.Nil(t, onSecondExists.Load(), "the item was removed by the peer during Remove")
	assert.Equal(t, 0, n, "Remove removed nothing: the peer did")
}

// Put takes any item whose node fits the packet limit (CheckDataSize). The move of such an
// item to the dead-letter path (and its requeue) is one transaction that carries the
// item's bytes plus the item's, the dead-letter node's and the lock node's paths, which
// framework refuses before sending (ErrDataTooLarge) for an item near the limit. finish
// takes that permanent error for a passing one: it sends the transaction again every
// 250 ms until the clean-up timeout (30 s), holding the item, then gives it back with
// ErrNotRemoved; the item's count starts again, so it is run n more times and the same
// happens, for ever: an item Put accepted is never dead-lettered, and each round holds
// the consumer 30 s.
func TestLargestItemCanBeDeadLettered(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)
	base := uniq("/dead-large")
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"),
		queue.WithMaxAttempts(1), queue.WithDeadLetterPath(base+"/dead"))
	require.NoError(t, err)
	// The largest item Put takes: its node's data (Curator's format adds 10 bytes) at the
	// limit CheckDataSize allows.
	lo, hi := 0, framework.DefaultMaxPacketSize
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if c.CheckDataSize(base+"/q/queue-0000000000", mid) == nil {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	_, err = q.Put(ctx, strings.Repeat("x", lo-10))
	require.NoError(t, err, "Put takes it")
	start := time.Now()
	err = q.ConsumeOne(ctx, func(context.Context, string) error { return errJob })
	elapsed := time.Since(start)
	t.Logf("ConsumeOne after %v: %v", elapsed.Round(time.Millisecond), err)
	assert.Less(t, elapsed, 10*time.Second, "a transaction refused before sending is not sent again until the clean-up timeout")
	var he *queue.HandlerError
	require.ErrorAs(t, err, &he)
	assert.True(t, he.DeadLettered, "the item given up on is moved to the dead-letter path: %v", err)
	assert.Len(t, testutil.Children(t, srv.ConnectString(), base+"/dead"), 1, "the item is in the dead-letter path")
}
