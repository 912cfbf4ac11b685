package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// Consume skips a bad node it reported, without reading it again; but names are reused:
// the queue path deleted and made again (here in one transaction, so that no listing
// sees it empty) starts its sequence numbers again, and a good item at the bad node's
// name is another node. Consume must deliver it, with or without a lock path.
func TestBadNodeForgottenWhenItsNameIsReused(t *testing.T) {
	leakcheck.Check(t)
	for _, locked := range []bool{false, true} {
		name := "unlocked"
		if locked {
			name = "locked"
		}
		t.Run(name, func(t *testing.T) {
			srv := server(t)
			c := testutil.Connect(t, srv.ConnectString())
			ctx := testutil.Context(t, time.Minute)
			base := uniq("/badnode")
			t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
			qp := base + "/q"
			bad, err := c.Create(ctx, qp+"/queue-", []byte("not an item"), framework.WithMode(framework.PersistentSequential), framework.WithParents())
			require.NoError(t, err)

			reported := make(chan error, 16)
			opts := []queue.Option{queue.WithErrorListener(func(err error) { reported <- err })}
			if locked {
				opts = append(opts, queue.WithLockPath(base+"/locks"))
			}
			q, err := queue.New(c, qp, queue.String{}, opts...)
			require.NoError(t, err)
			got := make(chan string, 4)
			cctx, cancel := context.WithCancel(ctx)
			done := testutil.Go(cctx, func(ctx context.Context) error {
				return q.Consume(ctx, func(_ context.Context, s string) error { got <- s; return nil })
			})
			select {
			case err := <-reported:
				var be *queue.BadItemError
				require.ErrorAs(t, err, &be)
			case <-time.After(30 * time.Second):
				t.Fatal("Consume did not report the bad node")
			}

			// The queue is wiped and made again with a good item at the bad node's name.
			res, err := c.Transaction(ctx,
				framework.DeleteOp(bad, -1),
				framework.DeleteOp(qp, -1),
				framework.CreateOp(qp, nil, framework.Persistent, nil),
				framework.CreateOp(qp+"/queue-", queue.EncodeItems([][]byte{[]byte("fresh")}), framework.PersistentSequential, nil))
			require.NoError(t, err)
			require.Equal(t, bad, res[3].Path, "the new item reuses the bad node's name")

			select {
			case s := <-got:
				require.Equal(t, "fresh", s)
			case <-time.After(30 * time.Second):
				t.Fatalf("the item put at %s after the queue was made again was never delivered (the bad node's name was remembered)", bad)
			}
			cancel()
			require.ErrorIs(t, testutil.Result(t, done, 20*time.Second, "Consume"), context.Canceled)
		})
	}
}
