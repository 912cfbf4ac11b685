package queue_test

import (
	"context"
	"errors"
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

// A consumer with a lock path whose handler failed, and whose removal (here a requeue)
// was applied while the queue path was deleted and made again, returns ErrMaybeGone: a
// new item at the reused name may be gone. The handler's failure must not be hidden by
// it: the error is a *HandlerError too (ConsumeOne's documented error for a failed
// handler, which says whether the item was requeued), and matches the handler's error.
// Consume reports the same to its error listener.
func TestLockedRemovalMaybeGoneKeepsTheHandlerError(t *testing.T) {
	leakcheck.Check(t)
	jobErr := errors.New("job failed")
	for _, one := range []bool{true, false} {
		name := "Consume"
		if one {
			name = "ConsumeOne"
		}
		t.Run(name, func(t *testing.T) {
			r := newR28Rig(t)
			ctx := testutil.Context(t, time.Minute)
			var mu sync.Mutex
			var reported []error
			q, err := queue.New(r.c, r.base+"/q", queue.String{}, queue.WithLockPath(r.base+"/locks"),
				queue.WithErrorListener(func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }))
			require.NoError(t, err)
			pq, err := queue.New(r.peer, r.base+"/q", queue.String{})
			require.NoError(t, err)
			_, err = pq.Put(ctx, "old")
			require.NoError(t, err)
			// As the requeue's transaction goes out, the queue path is made again with a
			// new item at the old one's name.
			var reuseErr error
			r.on("multi", func() {
				if reuseErr = r.peer.Delete(ctx, r.base+"/q", framework.WithChildren()); reuseErr == nil {
					_, reuseErr = pq.Put(ctx, "new")
				}
			})
			fail := func(context.Context, string) error { return jobErr }
			if one {
				err = q.ConsumeOne(ctx, fail)
			} else {
				cctx, cancel := context.WithCancel(ctx)
				done := testutil.Go(cctx, func(ctx context.Context) error { return q.Consume(ctx, fail) })
				require.Eventually(t, func() bool {
					mu.Lock()
					defer mu.Unlock()
					for _, e := range reported {
						if errors.Is(e, queue.ErrMaybeGone) {
							err = e
							return true
						}
					}
					return false
				}, 20*time.Second, 5*time.Millisecond, "Consume reports the removal that may have taken a new item")
				cancel()
				require.ErrorIs(t, testutil.Result(t, done, 20*time.Second, "Consume"), context.Canceled)
			}
			require.NoError(t, reuseErr)
			require.ErrorIs(t, err, queue.ErrMaybeGone)
			assert.ErrorIs(t, err, jobErr, "the handler's error is in the chain")
			var he *queue.HandlerError
			require.ErrorAs(t, err, &he, "the handler's failure is reported as a *HandlerError beside ErrMaybeGone: %v", err)
			assert.True(t, he.Requeued, "the requeue's transaction was applied")
		})
	}
}
