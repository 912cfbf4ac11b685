package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// errJob is the failure of the tests' always-failing job.
var errJob = errors.New("job failed")

// listener records what a consumer reports.
type listener struct {
	mu   sync.Mutex
	errs []error
}

func (l *listener) report(err error) { l.mu.Lock(); l.errs = append(l.errs, err); l.mu.Unlock() }

// exhausted returns the first reported error matching queue.ErrAttemptsExhausted.
func (l *listener) exhausted() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		if errors.Is(e, queue.ErrAttemptsExhausted) {
			return e
		}
	}
	return nil
}

// nodesWith returns the children of p (read by c) whose data is data.
func nodesWith(t *testing.T, c *framework.Client, p string, data []byte) []string {
	t.Helper()
	kids, _, err := c.Children(context.Background(), p)
	if errors.Is(err, framework.ErrNoNode) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, k := range kids {
		got, _, err := c.GetData(context.Background(), p+"/"+k)
		require.NoError(t, err)
		if string(got) == string(data) {
			out = append(out, k)
		}
	}
	return out
}

// An item whose handler always fails is not requeued forever. With
// WithMaxAttempts(3) and WithDeadLetterPath, the consumer runs it three times, then moves
// it (same bytes, its name prefix kept) to the dead-letter path, which is a queue of the
// same kind, and goes on with the other items. The listener hears of the move.
func TestMaxAttemptsMovesToDeadLetterPath(t *testing.T) {
	leakcheck.Check(t)
	for _, id := range []bool{false, true} {
		t.Run(fmt.Sprintf("id=%v", id), func(t *testing.T) {
			srv := server(t)
			c := testutil.ConnectFailFast(t, srv.ConnectString())
			peer := testutil.Connect(t, srv.ConnectString())
			ctx := testutil.Context(t, time.Minute)
			base := uniq("/deadletter")
			t.Cleanup(func() { _ = peer.Delete(context.Background(), base, framework.WithChildren()) })
			var l listener
			opts := []queue.Option{queue.WithLockPath(base + "/locks"), queue.WithMaxAttempts(3),
				queue.WithDeadLetterPath(base + "/dead"), queue.WithErrorListener(l.report)}
			var put func(string) (string, error)
			var consume func(context.Context, queue.Handler[string]) error
			prefix := "queue-"
			if id {
				q, err := queue.NewID(c, base+"/q", queue.String{}, opts...)
				require.NoError(t, err)
				put = func(s string) (string, error) { return q.Put(ctx, s, "job-"+s) }
				consume = q.Consume
				prefix = "queue-|job-bad|"
			} else {
				q, err := queue.New(c, base+"/q", queue.String{}, opts...)
				require.NoError(t, err)
				put = func(s string) (string, error) { return q.Put(ctx, s) }
				consume = q.Consume
			}
			badNode, err := put("bad")
			require.NoError(t, err)
			bytes, _, err := peer.GetData(ctx, badNode)
			require.NoError(t, err)
			for _, s := range []string{"a", "b"} {
				_, err := put(s)
				require.NoError(t, err)
			}
			var mu sync.Mutex
			runs := map[string]int{}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := testutil.Go(cctx, func(ctx context.Context) error {
				return consume(ctx, func(_ context.Context, s string) error {
					mu.Lock()
					runs[s]++
					mu.Unlock()
					if s == "bad" {
						return errJob
					}
					return nil
				})
			})
			require.Eventually(t, func() bool { return l.exhausted() != nil }, 30*time.Second, 5*time.Millisecond, "the consumer gives up on the item")
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return runs["a"] == 1 && runs["b"] == 1
			}, 30*time.Second, 5*time.Millisecond, "the other items are handled")
			cancel()
			require.ErrorIs(t, testutil.Result(t, done, 20*time.Second, "Consume"), context.Canceled)

			mu.Lock()
			assert.Equal(t, map[string]int{"bad": 3, "a": 1, "b": 1}, runs, "the failing item runs three times")
			mu.Unlock()
			err = l.exhausted()
			var he *queue.HandlerError
			require.ErrorAs(t, err, &he)
			assert.ErrorIs(t, err, errJob)
			assert.True(t, he.DeadLettered)
			assert.False(t, he.Requeued)
			assert.Equal(t, 3, he.Attempts)
			// Conserved: one node with the item's bytes, under the dead-letter path, with
			// the item's name prefix; none left in the queue; no lock node.
			dead := nodesWith(t, peer, base+"/dead", bytes)
			require.Len(t, dead, 1, "the item is in the dead-letter path once")
			assert.True(t, strings.HasPrefix(dead[0], prefix), "%s keeps the prefix %s", dead[0], prefix)
			assert.Equal(t, base+"/dead/"+dead[0], he.DeadLetterNode)
			assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/q"), "nothing left in the queue")
			assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/locks"))
			// The dead-letter path is a queue of the same kind.
			dq, err := queue.New(peer, base+"/dead", queue.String{})
			require.NoError(t, err)
			assert.Equal(t, []string{"bad"}, consumeN(t, ctx, dq.ConsumeOne, 1))
		})
	}
}

// Without a dead-letter path, an item that failed WithMaxAttempts times is left in the
// queue (its lock node deleted) and Consume returns the handler's error, matching
// ErrAttemptsExhausted.
func TestMaxAttemptsWithoutDeadLetterPathReturnsTheError(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/maxattempts")
	t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"), queue.WithMaxAttempts(2))
	require.NoError(t, err)
	_, err = q.Put(ctx, "bad")
	require.NoError(t, err)
	runs := 0
	err = q.Consume(ctx, func(context.Context, string) error { runs++; return errJob })
	require.ErrorIs(t, err, queue.ErrAttemptsExhausted)
	assert.ErrorIs(t, err, errJob)
	var he *queue.HandlerError
	require.ErrorAs(t, err, &he)
	assert.False(t, he.DeadLettered)
	assert.False(t, he.Requeued)
	assert.Equal(t, 2, he.Attempts)
	assert.Equal(t, 2, runs)
	assert.Len(t, testutil.Children(t, srv.ConnectString(), base+"/q"), 1, "the item stays in the queue")
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/locks"))
	// The count starts again: a new call gives the item its attempts again.
	runs = 0
	err = q.Consume(ctx, func(context.Context, string) error { runs++; return errJob })
	require.ErrorIs(t, err, queue.ErrAttemptsExhausted)
	assert.Equal(t, 2, runs)
}

// The options are checked at construction.
func TestMaxAttemptsOptionsChecked(t *testing.T) {
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	for name, opts := range map[string][]queue.Option{
		"zero":             {queue.WithLockPath("/l"), queue.WithMaxAttempts(0)},
		"no lock path":     {queue.WithMaxAttempts(3)},
		"ErrorMode Delete": {queue.WithLockPath("/l"), queue.WithMaxAttempts(3), queue.WithErrorMode(queue.Delete)},
		"dead alone":       {queue.WithLockPath("/l"), queue.WithDeadLetterPath("/d")},
		"dead is queue":    {queue.WithLockPath("/l"), queue.WithMaxAttempts(3), queue.WithDeadLetterPath("/q")},
		"dead is lock":     {queue.WithLockPath("/l"), queue.WithMaxAttempts(3), queue.WithDeadLetterPath("/l")},
		"dead bad":         {queue.WithLockPath("/l"), queue.WithMaxAttempts(3), queue.WithDeadLetterPath("d")},
	} {
		_, err := queue.New(c, "/q", queue.String{}, opts...)
		assert.ErrorIs(t, err, queue.ErrInvalidArgument, name)
	}
}

// The move to the dead-letter path is one transaction (the item deleted, bound to the node
// read, and created under the dead-letter path with the same bytes, and the lock node
// deleted): an item is never lost or duplicated by it, also when its request or its
// reply is lost with the connection and the client sends it again.
func TestDeadLetterMoveConservedWhenLost(t *testing.T) {
	leakcheck.Check(t)
	for _, lost := range []string{"reply", "request"} {
		t.Run(lost, func(t *testing.T) {
			r := newR28Rig(t)
			ctx := testutil.Context(t, 2*time.Minute)
			q, err := queue.New(r.c, r.base+"/q", queue.String{}, queue.WithLockPath(r.base+"/locks"),
				queue.WithMaxAttempts(1), queue.WithDeadLetterPath(r.base+"/dead"))
			require.NoError(t, err)
			node, err := q.Put(ctx, "bad")
			require.NoError(t, err)
			bytes, _, err := r.peer.GetData(ctx, node)
			require.NoError(t, err)
			sent := make(chan struct{})
			r.on("multi", func() {
				if lost == "reply" {
					r.proxy.HoldReplies()
				} else {
					r.proxy.StallToServers()
				}
				close(sent)
			})
			t.Cleanup(r.proxy.Heal)
			done := testutil.Go(ctx, func(ctx context.Context) error {
				return q.ConsumeOne(ctx, func(context.Context, string) error { return errJob })
			})
			testutil.WaitClosed(t, sent, 20*time.Second, "the move goes out")
			if lost == "reply" {
				require.Eventually(t, func() bool {
					st, err := r.peer.Exists(ctx, node)
					return err == nil && st == nil
				}, 20*time.Second, 5*time.Millisecond, "the move is applied")
			} else {
				time.Sleep(100 * time.Millisecond) // (not needed for the outcome: held either way)
				st, err := r.peer.Exists(ctx, node)
				require.NoError(t, err)
				require.NotNil(t, st, "the move has not reached the server")
			}
			r.proxy.DropConnections() // the request or its reply goes with the connection
			r.proxy.Heal()
			err = testutil.Result(t, done, 60*time.Second, "ConsumeOne")
			require.ErrorIs(t, err, queue.ErrAttemptsExhausted)
			var he *queue.HandlerError
			require.ErrorAs(t, err, &he)
			assert.True(t, he.DeadLettered, "moved: %v", err)
			t.Logf("ConsumeOne: %v", err)
			dead := nodesWith(t, r.peer, r.base+"/dead", bytes)
			require.Len(t, dead, 1, "the item is in the dead-letter path exactly once")
			if he.DeadLetterNode != "" {
				assert.Equal(t, r.base+"/dead/"+dead[0], he.DeadLetterNode)
			}
			assert.Empty(t, nodesWith(t, r.peer, r.base+"/q", bytes), "and not in the queue")
			assert.Empty(t, testutil.Children(t, server(t).ConnectString(), r.base+"/locks"))
		})
	}
}
