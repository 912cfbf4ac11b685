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
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// takeRig is a consumer's client behind a proxy, whose next delete request runs a
// function of the test's as it goes out (request hook: before it reaches the proxy), and
// a peer straight to the server.
type takeRig struct {
	proxy    *zktest.Proxy
	c, peer  *framework.Client
	onDelete atomic.Pointer[func()]
	base     string
}

func newTakeRig(t *testing.T, opts ...framework.Option) *takeRig {
	t.Helper()
	srv := server(t)
	r := &takeRig{proxy: zktest.NewProxy(t, srv.ConnectString()), base: fmt.Sprintf("/delivery/%d", time.Now().UnixNano())}
	all := append([]framework.Option{
		framework.WithDialer(r.proxy.Dialer()),
		framework.WithSessionTimeout(30 * time.Second), // replies held for a while: no read timeout meanwhile
		framework.WithRequestHook(func(op string) {
			if op == "delete" {
				if f := r.onDelete.Swap(nil); f != nil {
					(*f)()
				}
			}
		}),
	}, opts...)
	r.c = testutil.ConnectFailFast(t, srv.ConnectString(), all...)
	r.peer = testutil.Connect(t, srv.ConnectString())
	t.Cleanup(func() { _ = r.peer.Delete(context.Background(), r.base, framework.WithChildren()) }) // the server is the package's
	return r
}

// gone reports whether p is gone, read by the peer.
func (r *takeRig) gone(t *testing.T, p string) bool {
	st, err := r.peer.Exists(context.Background(), p)
	require.NoError(t, err)
	return st == nil
}

// heldTake runs take under a context it cancels once take's delete of item was applied
// with its answer held in the network (the proxy holds the server's replies from the
// moment the delete goes out). take's result comes on the channel; the replies are still
// held when heldTake returns.
func (r *takeRig) heldTake(t *testing.T, ctx context.Context, item string, take func(context.Context) error) <-chan error {
	t.Helper()
	hold := func() { r.proxy.HoldReplies() }
	r.onDelete.Store(&hold)
	t.Cleanup(r.proxy.Heal) // also when the test fails before it heals
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	done := testutil.Go(cctx, take)
	require.Eventually(t, func() bool { return r.gone(t, item) }, 20*time.Second, 5*time.Millisecond, "the take's delete is applied")
	cancel()
	return done
}

// A SimpleQueue take (Take, Poll, Remove) whose context ends while its delete is in
// flight loses no item: a take whose delete the server applied delivers its item (rather
// than return only "context canceled"); one whose answer is lost says the item may be gone.
func TestSimpleTakeCancelledWhileDeleteInFlightLosesNoItem(t *testing.T) {
	leakcheck.Check(t)
	r := newTakeRig(t)
	ctx := testutil.Context(t, 2*time.Minute)
	q, err := queue.NewSimple(r.c, r.base+"/simple", queue.String{})
	require.NoError(t, err)
	takes := map[string]func(context.Context) (string, error){
		"Take": q.Take,
		"Poll": func(ctx context.Context) (string, error) {
			it, ok, err := q.Poll(ctx)
			if err == nil && !ok {
				err = queue.ErrEmpty
			}
			return it, err
		},
		"Remove": q.Remove,
	}
	for _, name := range []string{"Take", "Poll", "Remove"} {
		take := takes[name]
		t.Run(name+"/applied", func(t *testing.T) {
			p, err := q.Offer(ctx, name)
			require.NoError(t, err)
			var got atomic.Pointer[string]
			done := r.heldTake(t, ctx, p, func(ctx context.Context) error {
				it, err := take(ctx)
				got.Store(&it)
				return err
			})
			testutil.NotYet(t, done, time.Second, name+" whose delete was applied, its answer held")
			r.proxy.Heal()
			require.NoError(t, testutil.Result(t, done, 30*time.Second, name), "the delete was applied: the item is delivered")
			assert.Equal(t, name, *got.Load())
		})
	}
	t.Run("Take/answer lost", func(t *testing.T) {
		p, err := q.Offer(ctx, "lost")
		require.NoError(t, err)
		var got atomic.Pointer[string]
		done := r.heldTake(t, ctx, p, func(ctx context.Context) error {
			it, err := q.Take(ctx)
			got.Store(&it)
			return err
		})
		r.proxy.DropConnections()
		r.proxy.Heal()
		err = testutil.Result(t, done, 30*time.Second, "Take")
		require.Error(t, err, "the answer was lost: the outcome is unknown, not a delivery (got %q)", *got.Load())
		assert.ErrorIs(t, err, framework.ErrUnknownOutcome, "the error says the item may be gone")
		assert.ErrorIs(t, err, queue.ErrMaybeGone)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

// ConsumeOne without a lock path, the same: a take whose delete was applied calls the
// handler (the node is gone). Also when the delete gives up after retries on a
// connection loss.
func TestConsumeOneCancelledWhileDeleteInFlightLosesNoItem(t *testing.T) {
	leakcheck.Check(t)
	once, err := retry.NewNTimes(1, 10*time.Millisecond)
	require.NoError(t, err)
	r := newTakeRig(t, framework.WithRetryPolicy(once))
	ctx := testutil.Context(t, 2*time.Minute)
	q, err := queue.New(r.c, r.base+"/q", queue.String{})
	require.NoError(t, err)
	consume := func(c *collector) func(context.Context) error {
		return func(ctx context.Context) error { return q.ConsumeOne(ctx, c.handle) }
	}

	t.Run("applied", func(t *testing.T) {
		p, err := q.Put(ctx, "applied")
		require.NoError(t, err)
		var c collector
		done := r.heldTake(t, ctx, p, consume(&c))
		testutil.NotYet(t, done, time.Second, "ConsumeOne whose delete was applied, its answer held")
		r.proxy.Heal()
		require.NoError(t, testutil.Result(t, done, 30*time.Second, "ConsumeOne"))
		assert.Equal(t, []string{"applied"}, c.items(), "the delete was applied: the handler gets the item")
	})
	t.Run("answer lost", func(t *testing.T) {
		p, err := q.Put(ctx, "lost")
		require.NoError(t, err)
		var c collector
		done := r.heldTake(t, ctx, p, consume(&c))
		r.proxy.DropConnections()
		r.proxy.Heal()
		err = testutil.Result(t, done, 30*time.Second, "ConsumeOne")
		assert.ErrorIs(t, err, framework.ErrUnknownOutcome, "the error says the item may be gone")
		assert.ErrorIs(t, err, queue.ErrMaybeGone)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Empty(t, c.items())
	})
	t.Run("retries given up", func(t *testing.T) {
		p, err := q.Put(ctx, "given up")
		require.NoError(t, err)
		var c collector
		hold := func() { r.proxy.HoldReplies() }
		r.onDelete.Store(&hold)
		t.Cleanup(r.proxy.Heal)
		done := testutil.Go(ctx, consume(&c))
		require.Eventually(t, func() bool { return r.gone(t, p) }, 20*time.Second, 5*time.Millisecond, "the delete is applied")
		r.proxy.Refuse()
		r.proxy.DropConnections() // the answer is lost; the one retry finds no server
		err = testutil.Result(t, done, 60*time.Second, "ConsumeOne")
		r.proxy.Heal()
		require.Error(t, err)
		assert.ErrorIs(t, err, framework.ErrUnknownOutcome, "the error says the item may be gone: %v", err)
		assert.ErrorIs(t, err, queue.ErrMaybeGone)
		assert.Empty(t, c.items())
	})
}

// Without a lock path an item is delivered once: consumer A's delete is held in the
// network, consumer B takes the item, A's connection drops; A's resent delete answers
// NoNode, which is not A's own: A does not deliver the item too.
func TestResentDeleteNoNodeIsNotADelivery(t *testing.T) {
	leakcheck.Check(t)
	r := newTakeRig(t)
	ctx := testutil.Context(t, 2*time.Minute)
	run := func(t *testing.T, p string, takeA, takeB func(context.Context) (string, error)) {
		sent := make(chan struct{})
		stall := func() { r.proxy.StallToServers(); close(sent) }
		r.onDelete.Store(&stall)
		var gotA atomic.Pointer[string]
		done := testutil.Go(ctx, func(ctx context.Context) error {
			it, err := takeA(ctx)
			if err == nil {
				gotA.Store(&it)
			}
			return err
		})
		testutil.WaitClosed(t, sent, 20*time.Second, "A's delete goes out")
		itB, err := takeB(ctx)
		require.NoError(t, err)
		require.Equal(t, "x", itB, "B takes the item")
		r.proxy.DropConnections() // A's delete, held, goes with the connection
		r.proxy.Heal()
		errA := testutil.Result(t, done, 60*time.Second, "A's take")
		require.Nil(t, gotA.Load(), "the item was delivered to A too (B had it): %q", p)
		assert.ErrorIs(t, errA, framework.ErrUnknownOutcome, "A's error says the item may be gone")
		assert.ErrorIs(t, errA, queue.ErrMaybeGone)
	}
	t.Run("SimpleQueue", func(t *testing.T) {
		qa, err := queue.NewSimple(r.c, r.base+"/simple", queue.String{})
		require.NoError(t, err)
		qb, err := queue.NewSimple(r.peer, r.base+"/simple", queue.String{})
		require.NoError(t, err)
		p, err := qb.Offer(ctx, "x")
		require.NoError(t, err)
		run(t, p, qa.Take, qb.Take)
	})
	t.Run("Queue", func(t *testing.T) {
		qa, err := queue.New(r.c, r.base+"/q", queue.String{})
		require.NoError(t, err)
		qb, err := queue.New(r.peer, r.base+"/q", queue.String{})
		require.NoError(t, err)
		p, err := qb.Put(ctx, "x")
		require.NoError(t, err)
		one := func(q *queue.Queue[string]) func(context.Context) (string, error) {
			return func(ctx context.Context) (string, error) {
				var c collector
				if err := q.ConsumeOne(ctx, c.handle); err != nil {
					return "", err
				}
				return c.items()[0], nil
			}
		}
		run(t, p, one(qa), one(qb))
	})
}

// With WithMaxItems, a Put after the queue path was deleted makes the path again, as the
// same Put without the option does (rather than fail with "getChildren …: node does not
// exist").
func TestMaxItemsPutMakesThePathAgain(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := fmt.Sprintf("/deliverymax/%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	for _, opts := range [][]queue.Option{nil, {queue.WithMaxItems(5)}} {
		q, err := queue.New(c, base+"/q", queue.String{}, opts...)
		require.NoError(t, err)
		_, err = q.Put(ctx, "a")
		require.NoError(t, err)
		require.NoError(t, c.Delete(ctx, base+"/q", framework.WithChildren()))
		_, err = q.Put(ctx, "b")
		require.NoError(t, err, "Put after the queue path was deleted (options %d)", len(opts))
		names, err := q.Items(ctx)
		require.NoError(t, err)
		assert.Len(t, names, 1)
		require.NoError(t, c.Delete(ctx, base+"/q", framework.WithChildren()))
	}
}

// PriorityQueue.Consume looks again after each take instead of working through its whole
// listing first: an item of priority -5 put after the first take is handled 2nd of 11.
func TestPriorityConsumeSeesNewItems(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := fmt.Sprintf("/deliveryprio/%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.NewPriority(c, base+"/q", queue.String{})
	require.NoError(t, err)
	for i := range 10 {
		_, err := q.Put(ctx, fmt.Sprint("p", i), 10)
		require.NoError(t, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got []string
	err = q.Consume(cctx, func(ctx context.Context, s string) error {
		got = append(got, s)
		if len(got) == 1 {
			if _, err := q.Put(ctx, "urgent", -5); err != nil {
				return err
			}
		}
		if len(got) == 11 {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, got, 11)
	assert.Equal(t, "urgent", got[1], "the item of priority -5 put after the first take comes next: %v", got)
}

// Removing a handled item (lock path) spares a new item that reused its name: the queue
// path was deleted and made again while the handler ran (sequence numbers start again).
// The new item stays and is delivered.
func TestRemovalSparesANewItemAtTheSameName(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	peer := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := fmt.Sprintf("/deliveryreuse/%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = peer.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	pq, err := queue.New(peer, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	old, err := q.Put(ctx, "old")
	require.NoError(t, err)
	var reused string
	err = q.ConsumeOne(ctx, func(ctx context.Context, s string) error {
		if err := peer.Delete(ctx, base+"/q", framework.WithChildren()); err != nil {
			return err
		}
		p, err := pq.Put(ctx, "new")
		reused = p
		return err
	})
	require.NoError(t, err)
	require.Equal(t, old, reused, "the new item reuses the handled item's name")
	names, err := pq.Items(ctx)
	require.NoError(t, err)
	require.Len(t, names, 1, "the new item that reused the handled item's name is still there")
	var got collector
	require.NoError(t, pq.ConsumeOne(ctx, got.handle))
	assert.Equal(t, []string{"new"}, got.items())
}

// In ErrorMode Requeue a failing item is not requeued at once, forever (an always-failing
// job would run hundreds of times a second): a requeue of the same item backs off (100 ms,
// doubling, up to 5 s): within 2 s it runs at most 6 times (0, 0.1, 0.3, 0.7, 1.5 s; a
// slower machine runs it fewer times, never more).
func TestRequeueBacksOff(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := fmt.Sprintf("/deliveryrequeue/%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	_, err = q.Put(ctx, "always fails")
	require.NoError(t, err)
	var runs atomic.Int32
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = q.Consume(cctx, func(context.Context, string) error {
		runs.Add(1)
		return fmt.Errorf("job failed")
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.LessOrEqual(t, runs.Load(), int32(6), "the failing item ran %d times in 2 s", runs.Load())
	assert.GreaterOrEqual(t, runs.Load(), int32(1))
	names, err := q.Items(ctx)
	require.NoError(t, err)
	assert.Len(t, names, 1, "the item is still queued")
}
