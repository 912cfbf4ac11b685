package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

func TestNewBadInput(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1") // never started: New must not talk to ZooKeeper
	require.NoError(t, err)
	defer c.Close()

	_, err = queue.New[[]byte](nil, "/q", queue.Bytes{})
	assert.ErrorIs(t, err, queue.ErrInvalidArgument)
	_, err = queue.New[[]byte](c, "/q", nil)
	assert.ErrorIs(t, err, queue.ErrNilSerializer)
	_, err = queue.NewSimple[string](c, "/q", nil)
	assert.ErrorIs(t, err, queue.ErrNilSerializer)
	_, err = queue.NewPriority[string](c, "/q", nil)
	assert.ErrorIs(t, err, queue.ErrNilSerializer)
	for _, p := range []string{"", "q", "/q/", "/a//b", "/", "/zookeeper", "/a\x00b"} {
		_, err := queue.New(c, p, queue.Bytes{})
		assert.ErrorIs(t, err, queue.ErrInvalidArgument, "path %q", p)
		_, err = queue.NewSimple(c, p, queue.Bytes{})
		assert.ErrorIs(t, err, queue.ErrInvalidArgument, "path %q", p)
	}
	for _, opt := range []queue.Option{queue.WithLockPath("bad"), queue.WithLockPath("/q"), queue.WithMaxItems(-1), queue.WithErrorMode(7)} {
		_, err := queue.New(c, "/q", queue.Bytes{}, opt)
		assert.ErrorIs(t, err, queue.ErrInvalidArgument)
	}
	q, err := queue.New(c, "/jobs/q", queue.String{}, queue.WithLockPath("/jobs/locks"))
	require.NoError(t, err)
	assert.Equal(t, "/jobs/q", q.Path())
	_, err = q.PutMulti(context.Background(), nil)
	assert.ErrorIs(t, err, queue.ErrInvalidArgument)
	assert.ErrorIs(t, q.ConsumeOne(context.Background(), nil), queue.ErrInvalidArgument)
	dq, err := queue.NewDelay(c, "/q", queue.String{})
	require.NoError(t, err)
	_, err = dq.Put(context.Background(), "x", time.Time{})
	assert.ErrorIs(t, err, queue.ErrInvalidArgument)
	iq, err := queue.NewID(c, "/q", queue.String{})
	require.NoError(t, err)
	_, err = iq.Put(context.Background(), "x", "")
	assert.ErrorIs(t, err, queue.ErrInvalidArgument)
}

// Items come out in put order, PutMulti's together; the nodes are Curator's; with a lock
// path nothing is left in either path afterwards.
func TestPutConsumeOrder(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	for _, lock := range []string{"", "/order/locks"} {
		q, err := queue.New(c, "/order/q", queue.String{}, queue.WithLockPath(lock))
		require.NoError(t, err)
		p, err := q.Put(ctx, "a")
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(p, "/order/q/queue-"), p)
		_, err = q.PutMulti(ctx, []string{"b", "c", "d"})
		require.NoError(t, err)
		_, err = q.Put(ctx, "e")
		require.NoError(t, err)
		names, err := q.Items(ctx)
		require.NoError(t, err)
		require.Len(t, names, 3)
		data, _, err := c.GetData(ctx, "/order/q/"+names[1])
		require.NoError(t, err)
		assert.Equal(t, queue.EncodeItems([][]byte{[]byte("b"), []byte("c"), []byte("d")}), data)

		got := consumeN(t, ctx, q.ConsumeOne, 3)
		assert.Equal(t, []string{"a", "b", "c", "d", "e"}, got, "lock path %q", lock)
		assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/order/q"))
		if lock != "" {
			assert.Empty(t, testutil.Children(t, srv.ConnectString(), lock))
		}
	}
}

// A failed handler requeues the node (at the end, with the lock path and ErrorMode
// Requeue) or drops it (Delete).
func TestErrorModes(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	boom := errors.New("boom")
	failOn := func(bad string, seen *[]string) queue.Handler[string] {
		return func(_ context.Context, s string) error {
			*seen = append(*seen, s)
			if s == bad {
				return boom
			}
			return nil
		}
	}

	q, err := queue.NewPriority(c, "/modes/requeue", queue.String{}, queue.WithLockPath("/modes/locks"))
	require.NoError(t, err)
	_, err = q.Put(ctx, "x", 1)
	require.NoError(t, err)
	_, err = q.Put(ctx, "y", 1)
	require.NoError(t, err)
	var seen []string
	err = q.ConsumeOne(ctx, failOn("x", &seen))
	var he *queue.HandlerError
	require.ErrorAs(t, err, &he)
	assert.True(t, he.Requeued)
	assert.ErrorIs(t, err, boom)
	names, err := q.Items(ctx)
	require.NoError(t, err)
	require.Len(t, names, 2)
	assert.True(t, strings.HasPrefix(names[1], "queue-"+queue.PriorityName(1)), "requeued with its priority: %v", names)
	require.NoError(t, q.ConsumeOne(ctx, failOn("none", &seen)))
	require.NoError(t, q.ConsumeOne(ctx, failOn("none", &seen)))
	assert.Equal(t, []string{"x", "y", "x"}, seen, "x requeued behind y")

	d, err := queue.New(c, "/modes/delete", queue.String{}, queue.WithLockPath("/modes/locks"), queue.WithErrorMode(queue.Delete))
	require.NoError(t, err)
	_, err = d.PutMulti(ctx, []string{"x", "z"})
	require.NoError(t, err)
	seen = nil
	err = d.ConsumeOne(ctx, failOn("x", &seen))
	require.ErrorAs(t, err, &he)
	assert.False(t, he.Requeued)
	assert.Equal(t, []string{"x", "z"}, seen, "Delete mode hands over the node's other items")
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/modes/delete"))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/modes/locks"))
}

// A consumer whose process dies mid-item (its session ends) loses nothing: the other
// consumer, which found the item locked, wakes when the lock goes and takes it.
func TestConsumerDiesMidItem(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	dying := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	opts := []queue.Option{queue.WithLockPath("/dies/locks")}
	q, err := queue.New(c, "/dies/q", queue.String{}, opts...)
	require.NoError(t, err)
	qd, err := queue.New(dying, "/dies/q", queue.String{}, opts...)
	require.NoError(t, err)
	_, err = q.Put(ctx, "job")
	require.NoError(t, err)

	inside, release := make(chan struct{}), make(chan struct{})
	dead := testutil.Go(ctx, func(ctx context.Context) error {
		return qd.ConsumeOne(ctx, func(context.Context, string) error {
			close(inside)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	})
	testutil.WaitClosed(t, inside, 20*time.Second, "dying consumer took the item")

	var got collector
	var reported []error
	var mu sync.Mutex
	q2, err := queue.New(c, "/dies/q", queue.String{}, queue.WithLockPath("/dies/locks"),
		queue.WithErrorListener(func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }))
	require.NoError(t, err)
	survivor := testutil.Go(ctx, func(ctx context.Context) error { return q2.ConsumeOne(ctx, got.handle) })
	// The survivor finds the lock taken; the item is not delivered while the holder lives.
	require.Eventually(t, func() bool {
		return zkWatches(c) >= 2 // the queue's children and the lock node
	}, 20*time.Second, 10*time.Millisecond)
	assert.Empty(t, got.items())

	require.NoError(t, dying.Close()) // the dying consumer's session ends
	require.NoError(t, testutil.Result(t, survivor, 30*time.Second, "survivor"))
	assert.Equal(t, []string{"job"}, got.items())
	close(release)
	err = testutil.Result(t, dead, 30*time.Second, "dead consumer")
	assert.Error(t, err, "the dead consumer could not finish the item")
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/dies/q"))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/dies/locks"))
	mu.Lock()
	assert.Empty(t, reported)
	mu.Unlock()
}

func zkWatches(c *framework.Client) int { return c.Watches() }

// Put waits while the queue holds maxItems, honouring its context.
func TestMaxItems(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	q, err := queue.New(c, "/max/q", queue.String{}, queue.WithMaxItems(2))
	require.NoError(t, err)
	for _, s := range []string{"a", "b"} {
		_, err := q.Put(ctx, s)
		require.NoError(t, err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = q.Put(short, "c")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the queue is full and nobody consumes")
	names, err := q.Items(ctx)
	require.NoError(t, err)
	assert.Len(t, names, 2, "the refused put left nothing")

	put := testutil.Go(ctx, func(ctx context.Context) error { _, err := q.Put(ctx, "c"); return err })
	got := consumeN(t, ctx, q.ConsumeOne, 1)
	require.NoError(t, testutil.Result(t, put, 20*time.Second, "put once there is room"))
	got = append(got, consumeN(t, ctx, q.ConsumeOne, 2)...)
	assert.Equal(t, []string{"a", "b", "c"}, got)
}

// Priorities: lowest first, put order within a priority.
func TestPriorityOrder(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	q, err := queue.NewPriority(c, "/prio/q", queue.String{})
	require.NoError(t, err)
	for i, p := range []int32{5, -3, 0, 100, -100, 5} {
		_, err := q.Put(ctx, fmt.Sprintf("%d:%d", p, i), p)
		require.NoError(t, err)
	}
	got := consumeN(t, ctx, q.ConsumeOne, 6)
	assert.Equal(t, []string{"-100:4", "-3:1", "0:2", "5:0", "5:5", "100:3"}, got)
}

// A delayed item is delivered no earlier than due; due items first.
func TestDelay(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	q, err := queue.NewDelay(c, "/delay/q", queue.String{}, queue.WithLockPath("/delay/locks"))
	require.NoError(t, err)
	due := time.Now().Add(1500 * time.Millisecond)
	_, err = q.Put(ctx, "later", due)
	require.NoError(t, err)
	_, err = q.Put(ctx, "now", time.Now().Add(-time.Second))
	require.NoError(t, err)
	var at []time.Time
	got := consumeN(t, ctx, func(ctx context.Context, h queue.Handler[string]) error {
		return q.ConsumeOne(ctx, func(ctx context.Context, s string) error {
			at = append(at, time.Now())
			return h(ctx, s)
		})
	}, 2)
	assert.Equal(t, []string{"now", "later"}, got)
	assert.False(t, at[1].Before(due.Truncate(time.Millisecond)), "delivered at %v, due %v", at[1], due)
}

// Items are removed by id; ids with "/" or "|" work.
func TestIDRemove(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	for _, lock := range []string{"", "/ids/locks"} {
		q, err := queue.NewID(c, "/ids/q", queue.String{}, queue.WithLockPath(lock))
		require.NoError(t, err)
		for _, it := range [][2]string{{"1", "a/x"}, {"2", "b"}, {"3", "a/x"}, {"4", "c|d"}} {
			_, err := q.Put(ctx, it[0], it[1])
			require.NoError(t, err)
		}
		n, err := q.Remove(ctx, "a/x")
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		n, err = q.Remove(ctx, "nope")
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Equal(t, []string{"2", "4"}, consumeN(t, ctx, q.ConsumeOne, 2))
	}
}

// A node that is not an item is reported by name and skipped (left in place); an item
// over the packet limit is refused before sending.
func TestBadItems(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	base := uniq("/bad")
	var mu sync.Mutex
	var reported []error
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"),
		queue.WithErrorListener(func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }))
	require.NoError(t, err)
	junk, err := c.Create(ctx, base+"/q/queue-", []byte("not an item"), framework.WithMode(framework.PersistentSequential), framework.WithParents())
	require.NoError(t, err)
	_, err = c.Create(ctx, base+"/q/foreign", nil)
	require.NoError(t, err)
	_, err = q.Put(ctx, "good")
	require.NoError(t, err)
	assert.Equal(t, []string{"good"}, consumeN(t, ctx, q.ConsumeOne, 1))
	mu.Lock()
	require.Len(t, reported, 1)
	var be *queue.BadItemError
	require.ErrorAs(t, reported[0], &be)
	assert.Equal(t, junk, be.Path)
	assert.ErrorIs(t, reported[0], queue.ErrNotAnItem)
	assert.Contains(t, reported[0].Error(), junk)
	mu.Unlock()
	assert.ElementsMatch(t, []string{framework.NodeName(junk), "foreign"}, testutil.Children(t, srv.ConnectString(), base+"/q"))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/locks"))

	_, err = q.Put(ctx, strings.Repeat("x", 1<<20))
	assert.ErrorIs(t, err, framework.ErrDataTooLarge)
	s, err := queue.NewSimple(c, base+"/simple", queue.String{})
	require.NoError(t, err)
	_, err = s.Offer(ctx, strings.Repeat("x", 1<<20))
	assert.ErrorIs(t, err, framework.ErrDataTooLarge)
}

// Several consumers share a queue: each item is delivered exactly once.
func TestConcurrentConsumers(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	ctx := testutil.Context(t, 60*time.Second)
	const items = 40
	p := testutil.ConnectFailFast(t, srv.ConnectString())
	prod, err := queue.New(p, "/many/q", queue.String{})
	require.NoError(t, err)
	for i := range items {
		_, err := prod.Put(ctx, fmt.Sprint(i))
		require.NoError(t, err)
	}
	var mu sync.Mutex
	count := map[string]int{}
	total := 0
	all := make(chan struct{})
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var errs []<-chan error
	for i := range 3 {
		c := testutil.ConnectFailFast(t, srv.ConnectString())
		q, err := queue.New(c, "/many/q", queue.String{}, queue.WithLockPath("/many/locks"))
		require.NoError(t, err)
		_ = i
		errs = append(errs, testutil.Go(cctx, func(ctx context.Context) error {
			return q.Consume(ctx, func(_ context.Context, s string) error {
				mu.Lock()
				defer mu.Unlock()
				count[s]++
				total++
				if total == items {
					close(all)
				}
				return nil
			})
		}))
	}
	testutil.WaitClosed(t, all, 40*time.Second, "all items consumed")
	stop()
	for _, e := range errs {
		assert.ErrorIs(t, testutil.Result(t, e, 20*time.Second, "consumer"), context.Canceled)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, count, items)
	for s, n := range count {
		assert.Equal(t, 1, n, "item %s", s)
	}
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/many/q"))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/many/locks"))
}

// SimpleQueue is Curator's: qn- nodes, Offer, Take (blocks), Poll, Peek, Element, Remove.
func TestSimpleQueue(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	q, err := queue.NewSimple(c, "/simple/q", queue.String{})
	require.NoError(t, err)
	_, err = q.Element(ctx)
	assert.ErrorIs(t, err, queue.ErrEmpty)
	_, err = q.Remove(ctx)
	assert.ErrorIs(t, err, queue.ErrEmpty)
	_, ok, err := q.Poll(ctx)
	require.NoError(t, err)
	assert.False(t, ok)
	_, ok, err = q.Peek(ctx)
	require.NoError(t, err)
	assert.False(t, ok)

	p, err := q.Offer(ctx, "one")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(p, "/simple/q/qn-"), p)
	data, _, err := c.GetData(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, "one", string(data), "no item format in a simple queue")
	_, err = q.Offer(ctx, "two")
	require.NoError(t, err)
	v, ok, err := q.Peek(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "one", v)
	v, err = q.Element(ctx)
	require.NoError(t, err)
	assert.Equal(t, "one", v)
	v, ok, err = q.Poll(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "one", v)
	v, err = q.Take(ctx)
	require.NoError(t, err)
	assert.Equal(t, "two", v)

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = q.Take(short)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	type res struct {
		v   string
		err error
	}
	took := make(chan res, 1)
	go func() { v, err := q.Take(ctx); took <- res{v, err} }()
	_, err = q.Offer(ctx, "three")
	require.NoError(t, err)
	select {
	case r := <-took:
		require.NoError(t, r.err)
		assert.Equal(t, "three", r.v)
	case <-ctx.Done():
		t.Fatal("Take never returned")
	}
	v2, err := q.Remove(ctx)
	assert.ErrorIs(t, err, queue.ErrEmpty, "got %q", v2)
}
