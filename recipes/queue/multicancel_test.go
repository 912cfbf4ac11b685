package queue_test

import (
	"context"
	"errors"
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

// A consumer with a lock path never runs its handler with an ended context (Handler's
// doc: a consumer whose context ended before the handler would run gives the item back
// rather than run it): also not for the second item of a node of several (PutMulti)
// whose context ended while the handler ran on the first. Else a handler that honours its
// context fails, and a healthy item is counted as a failed attempt: with
// WithMaxAttempts(1) it is moved to the dead-letter path because its consumer was stopped.
func TestMultiItemNodeHandlerNeverOnEndedContext(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/multicancel")
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"),
		queue.WithMaxAttempts(1), queue.WithDeadLetterPath(base+"/dead"))
	require.NoError(t, err)
	_, err = q.PutMulti(ctx, []string{"one", "two"})
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var endedFor []string
	err = q.ConsumeOne(cctx, func(hctx context.Context, item string) error {
		mu.Lock()
		defer mu.Unlock()
		if hctx.Err() != nil {
			endedFor = append(endedFor, item)
			return hctx.Err()
		}
		if item == "one" {
			cancel() // the consumer is stopped while it handles the first item
		}
		return nil
	})
	t.Logf("ConsumeOne: %v", err)
	mu.Lock()
	assert.Empty(t, endedFor, "the handler was called with an ended context for %v (ConsumeOne: %v)", endedFor, err)
	mu.Unlock()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	names, err := q.Items(ctx)
	require.NoError(t, err)
	dead, _, derr := c.Children(ctx, base+"/dead")
	if errors.Is(derr, framework.ErrNoNode) {
		derr = nil
	}
	require.NoError(t, derr)
	assert.Empty(t, dead, "the item was moved to the dead-letter path because its consumer was stopped (queue: %v)", names)
	assert.Len(t, names, 1, "the node holding the item not handled is in the queue")
}

// A consumer stopped while its handler runs on the first item of a node of several
// (PutMulti) does not deliver that item twice without saying so: docs/queues.md, "With a
// lock path an item is delivered at least once ... Twice only when told: ErrNotRemoved
// ..., ErrorMode Requeue ..., and a put sent twice after a lost reply", and "stopping a
// consumer does not deliver its last item twice". Either the item handled is not handed
// out again, or the stopped ConsumeOne's error says it may be (ErrNotRemoved).
func TestMultiItemNodeStoppedConsumerDoesNotRedeliverSilently(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/multiredeliver")
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	_, err = q.PutMulti(ctx, []string{"one", "two"})
	require.NoError(t, err)

	var mu sync.Mutex
	handled := map[string]int{}
	h := func(cancel context.CancelFunc) queue.Handler[string] {
		return func(hctx context.Context, item string) error {
			mu.Lock()
			defer mu.Unlock()
			handled[item]++
			if item == "one" && cancel != nil {
				cancel() // the consumer is stopped while it handles the first item
			}
			return nil
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := q.ConsumeOne(cctx, h(cancel))
	t.Logf("stopped ConsumeOne: %v", first)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
	defer tcancel()
	require.NoError(t, q.ConsumeOne(tctx, h(nil)), "the next ConsumeOne")
	mu.Lock()
	defer mu.Unlock()
	if !errors.Is(first, queue.ErrNotRemoved) {
		assert.Equal(t, 1, handled["one"], "item %q handled %d times; the stopped ConsumeOne returned only %v", "one", handled["one"], first)
	}
	assert.Equal(t, 1, handled["two"])
}
