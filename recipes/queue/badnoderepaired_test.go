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

// A bad node Consume reported and skips is remembered as that node; once its data is
// set to a good item (an operator repairs it in place: same node, new data), it is no
// longer the bad node reported, and Consume delivers it, in its place in the queue's
// order: before an item put after the repair.
func TestBadNodeRepairedInPlaceIsDelivered(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/badrepaired")
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	qp := base + "/q"
	bad, err := c.Create(ctx, qp+"/queue-", []byte("not an item"), framework.WithMode(framework.PersistentSequential), framework.WithParents())
	require.NoError(t, err)

	reported := make(chan error, 16)
	q, err := queue.New(c, qp, queue.String{}, queue.WithErrorListener(func(err error) { reported <- err }))
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

	_, err = c.SetData(ctx, bad, queue.EncodeItems([][]byte{[]byte("repaired")}), -1)
	require.NoError(t, err)
	_, err = q.Put(ctx, "later") // Consume lists the queue again: the repaired node comes first
	require.NoError(t, err)
	select {
	case s := <-got:
		require.Equal(t, "repaired", s, "the node repaired in place at %s was skipped as the bad node it had been", bad)
	case <-time.After(30 * time.Second):
		t.Fatal("nothing delivered")
	}
	cancel()
	require.ErrorIs(t, testutil.Result(t, done, 20*time.Second, "Consume"), context.Canceled)
}
