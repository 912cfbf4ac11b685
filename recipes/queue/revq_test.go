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
