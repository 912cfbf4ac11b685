package queue_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/zktest"
)

// An item removed by someone else while a consumer with a lock path handles it (a
// consumer without the lock path, IDQueue.Remove) is done: the consumer removes its lock
// and returns at once. An item whose lock node was deleted by someone else too (another
// consumer may have locked, handled and removed it) ends at once as well, with
// ErrNotRemoved: the consumer cannot tell that from a second delivery. framework's Exists
// answers a missing node with a nil Stat and no error; finishing must not take that for
// "still there" (and retry the transaction until the clean-up timeout) nor dereference
// the nil Stat of the lock.
func TestFinishItemGoneUnderLock(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	for _, lockToo := range []bool{true, false} {
		q, err := queue.New(c, "/gone/q", queue.String{}, queue.WithLockPath("/gone/locks"))
		require.NoError(t, err)
		p, err := q.Put(ctx, "x")
		require.NoError(t, err)
		start := time.Now()
		err = q.ConsumeOne(ctx, func(ctx context.Context, _ string) error {
			if lockToo {
				if err := other.Delete(ctx, "/gone/locks/"+p[len("/gone/q/"):]); err != nil {
					return err
				}
			}
			return other.Delete(ctx, p)
		})
		if lockToo {
			require.ErrorIs(t, err, queue.ErrNotRemoved, "lock node deleted too")
		} else {
			require.NoError(t, err, "item removed without the lock")
		}
		assert.Less(t, time.Since(start), 10*time.Second, "finishing spun until its clean-up timeout")
		assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/gone/q"))
		assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/gone/locks"))
	}
}

// intSerializer refuses anything but decimal digits.
type intSerializer struct{}

func (intSerializer) Serialize(n int) ([]byte, error)   { return []byte(strconv.Itoa(n)), nil }
func (intSerializer) Deserialize(b []byte) (int, error) { return strconv.Atoi(string(b)) }

// A simple queue's node the serializer refuses is skipped and left; Take reports it (by
// name) only when nothing else came before its context ended.
func TestSimpleQueueBadItem(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	path := uniq("/sbad") + "/q"
	q, err := queue.NewSimple(c, path, intSerializer{})
	require.NoError(t, err)
	raw, err := queue.NewSimple(c, path, queue.Bytes{})
	require.NoError(t, err)
	junk, err := raw.Offer(ctx, []byte("seven"))
	require.NoError(t, err)
	_, err = q.Offer(ctx, 7)
	require.NoError(t, err)
	v, err := q.Take(ctx)
	require.NoError(t, err)
	assert.Equal(t, 7, v)

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = q.Take(short)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var be *queue.BadItemError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, junk, be.Path)
	_, ok, err := q.Poll(ctx)
	assert.False(t, ok)
	assert.ErrorAs(t, err, &be, "Poll reports the bad node it skipped")
	assert.Equal(t, []string{junk[len(path+"/"):]}, testutil.Children(t, srv.ConnectString(), path), "left in place")
}

// A consumer whose session expired while its handler ran must not remove the item with
// the lock node at its lock path: that node is now another consumer's, which has taken
// the item. It reports ErrNotRemoved (the item is delivered twice: by it and by the
// other), and the other consumer finishes the item.
func TestFinishAfterSessionLossLeavesOthersLock(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	a := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(2*time.Second))
	b := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path, locks = "/sess/q", "/sess/locks"
	qa, err := queue.New(a, path, queue.String{}, queue.WithLockPath(locks))
	require.NoError(t, err)
	qb, err := queue.New(b, path, queue.String{}, queue.WithLockPath(locks))
	require.NoError(t, err)
	node, err := qa.Put(ctx, "x")
	require.NoError(t, err)
	lock := locks + "/" + framework.NodeName(node)
	gen0, _ := a.Session()

	aIn, aRelease := make(chan struct{}), make(chan struct{})
	aDone := testutil.Go(ctx, func(ctx context.Context) error {
		return qa.ConsumeOne(ctx, func(context.Context, string) error {
			close(aIn)
			<-aRelease
			return nil
		})
	})
	testutil.WaitClosed(t, aIn, 20*time.Second, "A handles the item")
	proxy.Stall() // A's session expires on the server, and its lock node with it
	require.Eventually(t, func() bool {
		st, err := b.Exists(ctx, lock)
		return err == nil && st == nil
	}, 30*time.Second, 20*time.Millisecond, "A's lock node goes with its session")

	bIn, bRelease := make(chan struct{}), make(chan struct{})
	bDone := testutil.Go(ctx, func(ctx context.Context) error {
		return qb.ConsumeOne(ctx, func(context.Context, string) error {
			close(bIn)
			<-bRelease
			return nil
		})
	})
	testutil.WaitClosed(t, bIn, 20*time.Second, "B takes the item A's lock no longer guards")
	proxy.Heal()
	require.Eventually(t, func() bool { gen, _ := a.Session(); return gen != gen0 }, 30*time.Second, 20*time.Millisecond,
		"A's client learns its session expired and opens a new one")

	close(aRelease)
	err = testutil.Result(t, aDone, 30*time.Second, "A's ConsumeOne")
	assert.ErrorIs(t, err, queue.ErrNotRemoved, "A's lock was lost: it must not remove the item B holds")
	var nre *queue.NotRemovedError
	if assert.ErrorAs(t, err, &nre) {
		assert.Equal(t, node, nre.Path, "the error names the item's node")
	}
	st, err := b.Exists(ctx, lock)
	require.NoError(t, err)
	assert.NotNil(t, st, "B's lock node is still there")
	close(bRelease)
	require.NoError(t, testutil.Result(t, bDone, 30*time.Second, "B's ConsumeOne"))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), path))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), locks))
}

// A consumer whose removal was in flight when its connection stalled, and whose session
// the server expired meanwhile, cannot know whether the item went with its removal or
// with another consumer's: once its client is back with a new session it reports
// ErrNotRemoved (here another consumer took the item after the lock node went, and
// delivered it again), not success.
func TestFinishInFlightAcrossSessionExpiry(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var stallOnMulti atomic.Bool
	a := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(2*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "multi" && stallOnMulti.CompareAndSwap(true, false) {
				proxy.Stall() // A's removal goes into the stall: it never reaches the server
			}
		}))
	b := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path, locks = "/inflight/q", "/inflight/locks"
	qa, err := queue.New(a, path, queue.String{}, queue.WithLockPath(locks))
	require.NoError(t, err)
	qb, err := queue.New(b, path, queue.String{}, queue.WithLockPath(locks))
	require.NoError(t, err)
	node, err := qa.Put(ctx, "x")
	require.NoError(t, err)
	lock := locks + "/" + framework.NodeName(node)

	var delivered atomic.Int32
	stallOnMulti.Store(true)
	aDone := testutil.Go(ctx, func(ctx context.Context) error {
		return qa.ConsumeOne(ctx, func(context.Context, string) error { delivered.Add(1); return nil })
	})
	require.Eventually(t, func() bool { return !stallOnMulti.Load() }, 20*time.Second, 10*time.Millisecond,
		"A handled the item and sent its removal")
	require.Eventually(t, func() bool {
		st, err := b.Exists(ctx, lock)
		return err == nil && st == nil
	}, 30*time.Second, 20*time.Millisecond, "A's lock node goes with its session")
	require.NoError(t, qb.ConsumeOne(ctx, func(context.Context, string) error { delivered.Add(1); return nil }),
		"B takes and removes the item")
	proxy.Heal()
	err = testutil.Result(t, aDone, 60*time.Second, "A's ConsumeOne")
	assert.Equal(t, int32(2), delivered.Load())
	assert.ErrorIs(t, err, queue.ErrNotRemoved, "A cannot tell its removal from B's: the item was delivered twice")
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), path))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), locks))
}
