package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// Watches piling up in the locked queue: while one consumer
// holds an item for long, every pass of every other consumer finds the item's lock node
// taken and watches it (getData), and the queue's children (getChildren). go-zookeeper
// cannot remove a watch, so a new watcher per pass or per ConsumeOne would grow with the
// passes. Not the case: the framework gives a client one watch per node and kind, shared
// by every caller (93bc470, older than the queue). go-zookeeper's watchers on the lock
// node and the queue node stay at one each over 30 ConsumeOne polls cancelled while they
// wait and 20 items taken by a long-running Consume, then go when the holder finishes.
// (With the framework's sharing turned off, a one-line mutation of its registry, this
// test counts 51 watchers on the lock node and fails.)
func TestConsumersShareTheWatchOnAHeldItem(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	const root, path, locks = "/qwatch", "/qwatch/q", "/qwatch/locks"
	ctx := testutil.Context(t, 90*time.Second)
	opts := []queue.Option{queue.WithLockPath(locks)}

	h := testutil.ConnectFailFast(t, srv.ConnectString())
	qh, err := queue.New(h, path, queue.String{}, opts...)
	require.NoError(t, err)
	held, err := qh.Put(ctx, "held")
	require.NoError(t, err)
	heldLock := locks + "/" + framework.NodeName(held)
	in, release := make(chan struct{}), make(chan struct{})
	holder := testutil.Go(ctx, func(ctx context.Context) error {
		return qh.ConsumeOne(ctx, func(context.Context, string) error {
			close(in)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	})
	testutil.WaitClosed(t, in, 20*time.Second, "the holder took the item")

	// The other consumers share one client; each read of the held item's lock node that
	// the server answered is counted.
	var lockReads atomic.Int64
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestObserver(func(ri framework.RequestInfo) {
		if ri.Op == "getData" && ri.Path == heldLock && ri.Err == nil {
			lockReads.Add(1)
		}
	}))
	q, err := queue.New(c, path, queue.String{}, opts...)
	require.NoError(t, err)
	waitReads := func(n int64) {
		t.Helper()
		require.Eventually(t, func() bool { return lockReads.Load() >= n }, 20*time.Second, 2*time.Millisecond,
			"%d reads of the held item's lock node", n)
	}
	var counts []string
	worst := 0
	measure := func(label string) {
		w := testutil.ZKWatchers(t, c, heldLock)
		k := testutil.ZKWatchers(t, c, path)
		counts = append(counts, fmt.Sprintf("%s %d+%d", label, w.Data, k.Children))
		worst = max(worst, w.Data+w.Exists+w.Children, k.Data+k.Exists+k.Children)
	}

	// ConsumeOne polls, each cancelled once it has read (and watched) the held lock.
	const polls = 30
	for i := range polls {
		pctx, cancel := context.WithCancel(ctx)
		n := lockReads.Load()
		done := testutil.Go(pctx, func(ctx context.Context) error {
			return q.ConsumeOne(ctx, func(context.Context, string) error { return errors.New("took an item") })
		})
		waitReads(n + 1)
		cancel()
		require.ErrorIs(t, testutil.Result(t, done, 20*time.Second, "a cancelled ConsumeOne"), context.Canceled)
		if i%10 == 9 {
			measure(fmt.Sprintf("poll %d", i+1))
		}
	}
	// A long-running Consume takes 20 items put one by one: each item is a pass over the
	// held item first.
	got := make(chan string, 1)
	cctx, stop := context.WithCancel(ctx)
	consumer := testutil.Go(cctx, func(ctx context.Context) error {
		return q.Consume(ctx, func(_ context.Context, s string) error { got <- s; return nil })
	})
	const items = 20
	for i := range items {
		n := lockReads.Load()
		_, err := qh.Put(ctx, fmt.Sprint("item", i))
		require.NoError(t, err)
		select {
		case s := <-got:
			assert.Equal(t, fmt.Sprint("item", i), s)
		case <-time.After(20 * time.Second):
			t.Fatalf("item%d not consumed", i)
		}
		waitReads(n + 1)
		if i%10 == 9 {
			measure(fmt.Sprintf("item %d", i+1))
		}
	}
	stop()
	require.ErrorIs(t, testutil.Result(t, consumer, 20*time.Second, "Consume"), context.Canceled)
	measure("end")
	t.Logf("%d reads of the held lock node by %d polls and %d items: go-zookeeper watchers (lock data + queue children): %s",
		lockReads.Load(), polls, items, strings.Join(counts, ", "))
	assert.LessOrEqual(t, worst, 1, "go-zookeeper watchers on the held lock node and on the queue node (%s): at most one per node and kind",
		strings.Join(counts, ", "))
	assert.LessOrEqual(t, c.Watches(), 2, "the client's watches")

	// The holder finishes: its lock node and item go, and with them every watch.
	close(release)
	require.NoError(t, testutil.Result(t, holder, 20*time.Second, "the holder"))
	require.Eventually(t, func() bool {
		return testutil.ZKWatchers(t, c, heldLock) == testutil.Watchers{} && testutil.ZKWatchers(t, c, path) == testutil.Watchers{}
	}, 20*time.Second, 5*time.Millisecond, "go-zookeeper's watchers fired")
	assert.Zero(t, c.Watches())
	require.Eventually(t, func() bool {
		out, err := zktest.FourLetterWord(srv.Addr(), "wchc", 5*time.Second)
		return err == nil && !strings.Contains(out, root+"/")
	}, 20*time.Second, 20*time.Millisecond, "server watches under %s", root)
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), path))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), locks))
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	_ = h.Delete(dctx, root, framework.WithChildren())
}
