package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// cancellingString is queue.String whose Deserialize runs cancel once armed: the
// consumer's context ends after it locked and read the item, before its handler.
type cancellingString struct {
	queue.String
	cancel atomic.Pointer[context.CancelFunc]
}

func (s *cancellingString) Deserialize(data []byte) (string, error) {
	if f := s.cancel.Swap(nil); f != nil {
		(*f)()
	}
	return s.String.Deserialize(data)
}

// A consumer with a lock path whose context ended after it locked and read an item, but
// before its handler ran, gives the item back untouched: the handler is not run (with an
// ended context it would fail, and a healthy item would be requeued or dead-lettered),
// the item stays where it was (same node), its lock node goes, and no attempt is
// counted. ConsumeOne returns the context's error.
func TestCancelledBeforeHandlerGivesTheItemBack(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/cancelbeforehandler")
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	ser := &cancellingString{}
	q, err := queue.New(c, base+"/q", queue.Serializer[string](ser), queue.WithLockPath(base+"/locks"),
		queue.WithMaxAttempts(2), queue.WithDeadLetterPath(base+"/dead"))
	require.NoError(t, err)
	p, err := q.Put(ctx, "x")
	require.NoError(t, err)
	before, err := c.Exists(ctx, p)
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ser.cancel.Store(&cancel)
	var ran atomic.Int32
	err = q.ConsumeOne(cctx, func(ctx context.Context, _ string) error {
		ran.Add(1)
		return ctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, ran.Load(), "the handler ran with an ended context: %v", err)
	after, err := c.Exists(ctx, p)
	require.NoError(t, err)
	if assert.NotNil(t, after, "the item's node %s is gone (requeued or moved): %v", p, testutil.Children(t, srv.ConnectString(), base+"/q")) {
		assert.Equal(t, before.Czxid, after.Czxid, "the item is the same node")
	}
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/locks"), "the lock node is removed")

	// No attempt was counted: the item's first failure requeues it (attempt 1 of 2).
	jobErr := context.DeadlineExceeded
	err = q.ConsumeOne(ctx, func(context.Context, string) error { return jobErr })
	var he *queue.HandlerError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 1, he.Attempts, "the given-back take counted as an attempt")
	assert.True(t, he.Requeued)
}
