package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// ConsumeOne works through its last listing before it lists again. The queue's order
// holds with puts in between (a node created since sorts after the ones listed), nodes
// another consumer took meanwhile are passed over, and once the listing is used up the
// next ConsumeOne lists again and waits for an item put later.
func TestConsumeOneKeepsItsListing(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	for _, lock := range []string{"", "/keep/locks"} {
		q, err := queue.New(c, "/keep/q", queue.String{}, queue.WithLockPath(lock))
		require.NoError(t, err)
		qo, err := queue.New(other, "/keep/q", queue.String{}, queue.WithLockPath(lock))
		require.NoError(t, err)
		for i := range 6 {
			_, err := q.Put(ctx, fmt.Sprint("a", i))
			require.NoError(t, err)
		}
		var got []string
		take := func() {
			t.Helper()
			require.NoError(t, q.ConsumeOne(ctx, func(_ context.Context, s string) error {
				got = append(got, s)
				return nil
			}))
		}
		take() // lists a0..a5, takes a0
		_, err = q.Put(ctx, "b0")
		require.NoError(t, err)
		take() // a1, from the listing
		require.NoError(t, qo.ConsumeOne(ctx, func(_ context.Context, s string) error {
			assert.Equal(t, "a2", s, "lock path %q: the other consumer takes the head", lock)
			return nil
		}))
		take() // a2 is gone: a3, or (having lost a race it may jump one node) a4
		take()
		take()
		take() // the listing is used up: lists again, b0 last
		require.Len(t, got, 6)
		assert.Equal(t, []string{"a0", "a1"}, got[:2], "lock path %q", lock)
		assert.ElementsMatch(t, []string{"a3", "a4", "a5"}, got[2:5], "lock path %q", lock)
		assert.Equal(t, "b0", got[5], "lock path %q", lock)

		// Empty now: the next ConsumeOne waits for an item put later.
		done := testutil.Go(ctx, func(ctx context.Context) error {
			return q.ConsumeOne(ctx, func(_ context.Context, s string) error {
				got = append(got, s)
				return nil
			})
		})
		_, err = qo.Put(ctx, "c0")
		require.NoError(t, err)
		require.NoError(t, testutil.Result(t, done, 20*time.Second, "ConsumeOne on an emptied queue"))
		assert.Equal(t, "c0", got[len(got)-1])
		assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/keep/q"))
		if lock != "" {
			assert.Empty(t, testutil.Children(t, srv.ConnectString(), lock))
		}
	}
}

// A priority queue's ConsumeOne lists every time: an item of a higher priority put after a
// listing is taken before the rest of that listing.
func TestPriorityConsumeOneSeesNewItems(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	q, err := queue.NewPriority(c, "/prionew/q", queue.String{})
	require.NoError(t, err)
	for i := range 3 {
		_, err := q.Put(ctx, fmt.Sprint("p10-", i), 10)
		require.NoError(t, err)
	}
	got := consumeN(t, ctx, q.ConsumeOne, 1)
	_, err = q.Put(ctx, "p1", 1)
	require.NoError(t, err)
	got = append(got, consumeN(t, ctx, q.ConsumeOne, 3)...)
	assert.Equal(t, []string{"p10-0", "p1", "p10-1", "p10-2"}, got)
}

// Consumers racing for one queue all get their items, each item once, and a lone
// consumer's order is the queue's (the jump past nodes lost to others does not reorder
// it). The nodes a consumer jumped over are taken by the others or by its next listing.
func TestRacingConsumersTakeEveryItemOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	ctx := testutil.Context(t, 60*time.Second)
	const items, consumers = 200, 4
	producer := testutil.ConnectFailFast(t, srv.ConnectString())
	pq, err := queue.New(producer, "/race/q", queue.String{})
	require.NoError(t, err)
	for i := range items {
		_, err := pq.Put(ctx, fmt.Sprintf("%03d", i))
		require.NoError(t, err)
	}
	seen := make(chan string, items+consumers)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var done []<-chan error
	for range consumers {
		cc := testutil.ConnectFailFast(t, srv.ConnectString())
		q, err := queue.New(cc, "/race/q", queue.String{})
		require.NoError(t, err)
		done = append(done, testutil.Go(cctx, func(ctx context.Context) error {
			for {
				err := q.ConsumeOne(ctx, func(_ context.Context, s string) error {
					seen <- s
					return nil
				})
				if err != nil {
					return nil // ctx ended: all taken (checked below)
				}
			}
		}))
	}
	count := map[string]int{}
	for range items {
		select {
		case s := <-seen:
			count[s]++
		case <-ctx.Done():
			t.Fatalf("only %d of %d items taken", len(count), items)
		}
	}
	assert.Len(t, count, items)
	for s, n := range count {
		assert.Equal(t, 1, n, "item %s taken %d times", s, n)
	}
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/race/q"))
	stop()
	for _, d := range done {
		require.NoError(t, testutil.Result(t, d, 20*time.Second, "a consumer stopping"))
	}
}
