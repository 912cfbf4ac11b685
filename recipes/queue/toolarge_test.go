package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// An item so near the packet limit that its move's transaction (its bytes and three
// paths, here a long dead-letter path) does not fit is given back at once, not sent again
// until the clean-up timeout: the error says why (framework.ErrDataTooLarge), says the
// item was not moved, and the item is still in the queue.
func TestMoveTooLargeGivenBackAtOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/toolarge")
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	dead := base + "/dead-" + strings.Repeat("d", 600)
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"),
		queue.WithMaxAttempts(1), queue.WithDeadLetterPath(dead))
	require.NoError(t, err)
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
	require.NoError(t, err)
	start := time.Now()
	err = q.ConsumeOne(ctx, func(context.Context, string) error { return errJob })
	t.Logf("ConsumeOne after %v: %v", time.Since(start).Round(time.Millisecond), err)
	assert.Less(t, time.Since(start), 10*time.Second, "not sent again until the clean-up timeout")
	require.ErrorIs(t, err, queue.ErrNotRemoved)
	require.ErrorIs(t, err, framework.ErrDataTooLarge)
	assert.NotErrorIs(t, err, framework.ErrUnknownOutcome, "nothing was sent")
	var he *queue.HandlerError
	require.ErrorAs(t, err, &he)
	assert.False(t, he.DeadLettered)
	assert.Contains(t, err.Error(), "not moved: in the queue")
	assert.Len(t, testutil.Children(t, srv.ConnectString(), base+"/q"), 1, "the item is still in the queue")
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/locks"), "its lock node is gone")
}
