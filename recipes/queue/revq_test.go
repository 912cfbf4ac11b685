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

// An item given up on (WithMaxAttempts) whose node was removed by someone else while its
// handler ran (an operator, IDQueue.Remove without a lock path, a Curator consumer without
// one) is not moved: the consumer finds it gone before it sends the move, and sends
// nothing. No connection was lost, no answer went missing: the consumer knows the move
// was not applied. It must not report DeadLettered (nor, for a plain requeue, Requeued):
// the dead-letter path is empty, and a caller that trusts DeadLettered looks there for the
// item in vain.
func TestRevqGivenUpItemRemovedMeanwhileNotReportedDeadLettered(t *testing.T) {
	leakcheck.Check(t)
	for _, mode := range []string{"dead-letter", "requeue"} {
		t.Run(mode, func(t *testing.T) {
			srv := server(t)
			c := testutil.ConnectFailFast(t, srv.ConnectString())
			peer := testutil.Connect(t, srv.ConnectString())
			ctx := testutil.Context(t, time.Minute)
			base := uniq("/revq-gone")
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
func TestRevqJSONNullNotTakenForAZeroItem(t *testing.T) {
	leakcheck.Check(t)
	_, err := queue.JSON[job]{}.Deserialize([]byte("null"))
	assert.Error(t, err, "null is not a queue_test.job")

	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	path := uniq("/revq-json") + "/q"
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
