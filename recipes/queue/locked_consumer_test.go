package queue_test

import (
	"context"
	"errors"
	"sync"
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

// Two consumers in one process share a client (one session): A holds item X's
// lock and runs its handler; B's context ends just as B reaches X (here: B's error
// listener cancels it on the bad item before X, deterministically). B's lock create fails
// with the context's error, and B "removes the lock node if it is ours": ownLock only
// comparing the node's ephemeral owner with the session is not enough: B must not delete
// A's lock node while A still handles X (a consumer C in another process would then take
// X too: X delivered twice, and nobody reporting ErrNotRemoved).
func TestSameSessionConsumerSparesSiblingsLock(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path, locks = "/lockedsame/q", "/lockedsame/locks"

	raw, err := queue.New(c, path, queue.Bytes{})
	require.NoError(t, err)
	_, err = raw.Put(ctx, []byte("not-an-int")) // a bad item ahead of X
	require.NoError(t, err)
	qa, err := queue.New(c, path, intSerializer{}, queue.WithLockPath(locks))
	require.NoError(t, err)
	x, err := qa.Put(ctx, 42)
	require.NoError(t, err)
	xLock := locks + "/" + framework.NodeName(x)

	aIn, aRelease := make(chan struct{}), make(chan struct{})
	aDone := testutil.Go(ctx, func(ctx context.Context) error {
		return qa.ConsumeOne(ctx, func(context.Context, int) error {
			close(aIn)
			<-aRelease
			return nil
		})
	})
	testutil.WaitClosed(t, aIn, 20*time.Second, "A handles X")

	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	qb, err := queue.New(c, path, intSerializer{}, queue.WithLockPath(locks),
		queue.WithErrorListener(func(err error) {
			var be *queue.BadItemError
			if errors.As(err, &be) {
				bcancel() // B gives up while it goes on to X
			}
		}))
	require.NoError(t, err)
	err = qb.Consume(bctx, func(context.Context, int) error { t.Error("B got an item"); return nil })
	require.ErrorIs(t, err, context.Canceled)

	st, err := other.Exists(ctx, xLock)
	require.NoError(t, err)
	assert.NotNil(t, st, "A still handles X: its lock node must still be there (B deleted it)")

	// What a user notices: another process takes X while A still handles it.
	qc, err := queue.New(other, path, intSerializer{}, queue.WithLockPath(locks))
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = qc.ConsumeOne(short, func(context.Context, int) error { return nil })
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded, "C must not get X while A handles it (delivered twice)")

	close(aRelease)
	_ = testutil.Result(t, aDone, 30*time.Second, "A's ConsumeOne")
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	_ = other.Delete(dctx, "/lockedsame", framework.WithChildren())
}

// finish does not retry its removal transaction in a tight loop on an error that is not a
// connection loss: here NotEmpty (a child under the item node; NoAuth from an ACL does
// the same). Every retry would fail the same way, hammering ZooKeeper with thousands of
// transactions until the 30 s clean-up timeout; it gives the item back instead.
func TestFinishDoesNotSpinOnPermanentError(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	var multis atomic.Int64
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op == "multi" {
			multis.Add(1)
		}
	}))
	ctx := testutil.Context(t, 90*time.Second)
	const path, locks = "/lockedspin/q", "/lockedspin/locks"
	q, err := queue.New(c, path, queue.String{}, queue.WithLockPath(locks))
	require.NoError(t, err)
	node, err := q.Put(ctx, "x")
	require.NoError(t, err)
	_, err = c.Create(ctx, node+"/child", nil) // the item node cannot be deleted: NotEmpty
	require.NoError(t, err)

	err = q.ConsumeOne(ctx, func(context.Context, string) error { return nil })
	assert.ErrorIs(t, err, queue.ErrNotRemoved)
	assert.LessOrEqual(t, multis.Load(), int64(3), "removal transactions sent for one item whose removal cannot succeed")
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), locks), "the lock node is given back")
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	_ = c.Delete(dctx, "/lockedspin", framework.WithChildren())
}

// BadItemError's doc promises that ConsumeOne returns a bad item it skipped "as
// ConsumeOne's error when no other item was taken" (as SimpleQueue.Take does), not only
// ctx's error: without an error listener the bad node is still named to the caller.
func TestConsumeOneReportsBadItem(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	junk, err := c.Create(ctx, "/lockedbad/q/queue-", []byte("not an item"),
		framework.WithMode(framework.PersistentSequential), framework.WithParents())
	require.NoError(t, err)
	q, err := queue.New(c, "/lockedbad/q", queue.String{})
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, time.Second)
	err = q.ConsumeOne(short, func(context.Context, string) error { return nil })
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var be *queue.BadItemError
	if assert.ErrorAs(t, err, &be, "ConsumeOne names the bad node it skipped") {
		assert.Equal(t, junk, be.Path)
	}
	_ = c.Delete(ctx, "/lockedbad", framework.WithChildren())
}

// A waiting consumer hears the death of the holder of any item it passed over, not only
// of the FIRST item whose lock another consumer holds: when the holder of a later item
// dies (its lock node goes with its session) while the first holder is alive and busy,
// the queue's children do not change, yet the dead consumer's item is delivered again
// without waiting for the first item to be finished (hours, for a long job).
func TestWaitingConsumerHearsLaterHolderDeath(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	const path, locks = "/lockedwake/q", "/lockedwake/locks"
	ctx := testutil.Context(t, 90*time.Second)
	p := testutil.ConnectFailFast(t, srv.ConnectString())
	qp, err := queue.New(p, path, queue.String{}, queue.WithLockPath(locks))
	require.NoError(t, err)
	_, err = qp.Put(ctx, "x1")
	require.NoError(t, err)
	x2, err := qp.Put(ctx, "x2")
	require.NoError(t, err)
	x2Lock := locks + "/" + framework.NodeName(x2)

	hold := func(c *framework.Client, want string) (chan struct{}, <-chan error) {
		q, err := queue.New(c, path, queue.String{}, queue.WithLockPath(locks))
		require.NoError(t, err)
		in, release := make(chan struct{}), make(chan struct{})
		done := testutil.Go(ctx, func(ctx context.Context) error {
			return q.ConsumeOne(ctx, func(_ context.Context, s string) error {
				if s != want {
					t.Errorf("got %s, want %s", s, want)
				}
				close(in)
				<-release
				return nil
			})
		})
		testutil.WaitClosed(t, in, 20*time.Second, "a holder takes "+want)
		return release, done
	}
	aRelease, aDone := hold(testutil.ConnectFailFast(t, srv.ConnectString()), "x1")
	b := testutil.ConnectFailFast(t, srv.ConnectString())
	bRelease, bDone := hold(b, "x2")

	sawX2Locked := make(chan struct{})
	var once sync.Once
	cc := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestObserver(func(ri framework.RequestInfo) {
		if ri.Op == "create" && ri.Path == x2Lock && errors.Is(ri.Err, framework.ErrNodeExists) {
			once.Do(func() { close(sawX2Locked) })
		}
	}))
	qc, err := queue.New(cc, path, queue.String{}, queue.WithLockPath(locks))
	require.NoError(t, err)
	got := make(chan string, 2)
	cctx, stop := context.WithCancel(ctx)
	cDone := testutil.Go(cctx, func(ctx context.Context) error {
		return qc.Consume(ctx, func(_ context.Context, s string) error { got <- s; return nil })
	})
	testutil.WaitClosed(t, sawX2Locked, 20*time.Second, "C found x2 locked by B")

	require.NoError(t, b.Close()) // B dies mid-item: its lock node goes at once
	select {
	case s := <-got:
		assert.Equal(t, "x2", s)
	case <-time.After(15 * time.Second):
		t.Error("C never took x2, whose consumer died, while A still holds x1")
	}
	close(aRelease)
	close(bRelease)
	_ = testutil.Result(t, aDone, 30*time.Second, "A")
	_ = testutil.Result(t, bDone, 30*time.Second, "B")
	stop()
	_ = testutil.Result(t, cDone, 30*time.Second, "C")
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	_ = p.Delete(dctx, "/lockedwake", framework.WithChildren())
}
