package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// IDQueue.Remove with a lock path runs no handler: nothing obliges it to outlive its
// context. Its removal applied with the answer held (the connection stalled), its context
// ending, it returns promptly with an error that says what is known: the removal went out
// and its outcome is unknown (the item may be gone; ErrMaybeGone), nothing of a handler.
func TestIDQueueRemoveLockedCancelledOnStalledConnection(t *testing.T) {
	leakcheck.Check(t)
	r := newR28Rig(t)
	ctx := testutil.Context(t, 2*time.Minute)
	q, err := queue.NewID(r.c, r.base+"/q", queue.String{}, queue.WithLockPath(r.base+"/locks"))
	require.NoError(t, err)
	p, err := q.Put(ctx, "x", "a")
	require.NoError(t, err)

	sent := make(chan struct{})
	r.on("multi", func() { r.proxy.HoldReplies(); close(sent) })
	t.Cleanup(r.proxy.Heal)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() { n, err := q.Remove(cctx, "a"); done <- result{n, err} }()
	testutil.WaitClosed(t, sent, 20*time.Second, "the removal goes out")
	require.Eventually(t, func() bool {
		st, err := r.peer.Exists(ctx, p)
		return err == nil && st == nil
	}, 20*time.Second, 5*time.Millisecond, "the removal is applied")
	cancel()
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Remove (lock path) did not return within 10 s of its context's end on a stalled connection")
	}
	r.proxy.Heal()
	t.Logf("Remove returned %d, %v", res.n, res.err)
	assert.Zero(t, res.n, "a removal whose outcome is unknown is not counted")
	require.ErrorIs(t, res.err, queue.ErrMaybeGone)
	assert.ErrorIs(t, res.err, framework.ErrUnknownOutcome)
	assert.ErrorIs(t, res.err, context.Canceled)
	assert.NotContains(t, res.err.Error(), "handled", "no handler ran")
	require.NoError(t, r.c.WaitGuaranteedDeletes(ctx))
}

// IDQueue.Remove with a lock path whose removal was applied and answered, its context
// ending before the read of the queue path that follows (the one that tells the item
// from a new one at its reused name), counts the item: the removal is known applied, as a
// take's delete without a lock path is then (only a queue path made again in between
// would say otherwise, and the read could not be made). Not ErrMaybeGone with 0.
func TestIDQueueRemoveLockedAppliedThenCancelledCountsIt(t *testing.T) {
	leakcheck.Check(t)
	r := newR28Rig(t)
	ctx := testutil.Context(t, 2*time.Minute)
	q, err := queue.NewID(r.c, r.base+"/q", queue.String{}, queue.WithLockPath(r.base+"/locks"))
	require.NoError(t, err)
	p, err := q.Put(ctx, "x", "a")
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	read := make(chan struct{})
	r.on("multi", func() {
		// The removal goes out and is answered; at the read of the queue path after it,
		// its reply held, the context ends.
		r.on("exists", func() { r.proxy.HoldReplies(); cancel(); close(read) })
	})
	t.Cleanup(r.proxy.Heal)
	n, err := q.Remove(cctx, "a")
	r.proxy.Heal()
	t.Logf("Remove returned %d, %v", n, err)
	testutil.WaitClosed(t, read, time.Second, "the queue path is read after the removal")
	st, serr := r.peer.Exists(ctx, p)
	require.NoError(t, serr)
	require.Nil(t, st, "the removal was applied")
	assert.NotErrorIs(t, err, queue.ErrMaybeGone, "a removal applied and answered is reported as maybe gone")
	assert.NoError(t, err)
	assert.Equal(t, 1, n, "the removal applied and answered is not counted")
	assert.Empty(t, testutil.Children(t, server(t).ConnectString(), r.base+"/locks"))
	require.NoError(t, r.c.WaitGuaranteedDeletes(ctx))
}
