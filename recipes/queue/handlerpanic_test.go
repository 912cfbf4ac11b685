package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// A handler that panics is a handler that failed: the consumer recovers, releases the
// item as the options say for a failure (requeued by default; moved to the dead-letter
// path once its attempts are spent), leaves no lock node, and reports the panic as a
// *HandlerError whose error is a *PanicError (ConsumeOne returns it; Consume tells its
// error listener and goes on).
func TestHandlerPanicReleasesTheItem(t *testing.T) {
	leakcheck.Check(t)
	for _, one := range []bool{true, false} {
		name := "Consume"
		if one {
			name = "ConsumeOne"
		}
		t.Run(name, func(t *testing.T) {
			srv := server(t)
			c := testutil.Connect(t, srv.ConnectString())
			ctx := testutil.Context(t, time.Minute)
			base := uniq("/handlerpanic")
			t.Cleanup(func() { _ = c.Delete(context.Background(), base, framework.WithChildren()) })
			var l listener
			opts := []queue.Option{queue.WithLockPath(base + "/locks"), queue.WithErrorListener(l.report)}
			if !one {
				opts = append(opts, queue.WithMaxAttempts(1), queue.WithDeadLetterPath(base+"/dead"))
			}
			q, err := queue.New(c, base+"/q", queue.String{}, opts...)
			require.NoError(t, err)
			_, err = q.Put(ctx, "x")
			require.NoError(t, err)
			boom := func(context.Context, string) error { panic("boom") }

			// A panic let through is caught here, so that the test reports it.
			guarded := func(f func() error) (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("the handler's panic went through the consumer: %v", r)
					}
				}()
				return f()
			}
			if one {
				err = guarded(func() error { return q.ConsumeOne(ctx, boom) })
			} else {
				cctx, cancel := context.WithCancel(ctx)
				done := testutil.Go(cctx, func(ctx context.Context) error {
					return guarded(func() error { return q.Consume(ctx, boom) })
				})
				require.Eventually(t, func() bool {
					select {
					case err = <-done:
						return true
					default:
					}
					err = l.exhausted()
					return err != nil
				}, 30*time.Second, 5*time.Millisecond, "Consume reports the item given up on")
				cancel()
				if err != nil && errors.Is(err, queue.ErrAttemptsExhausted) {
					require.ErrorIs(t, testutil.Result(t, done, 20*time.Second, "Consume"), context.Canceled)
				}
			}
			require.Error(t, err)
			require.NotContains(t, err.Error(), "went through the consumer", "lock nodes left: %v", testutil.Children(t, srv.ConnectString(), base+"/locks"))
			var he *queue.HandlerError
			require.ErrorAs(t, err, &he, "a panic is reported as a failed handler: %v", err)
			var pe *queue.PanicError
			if assert.ErrorAs(t, err, &pe, "the handler's error is a *PanicError") {
				assert.Equal(t, "boom", pe.Value)
			}
			assert.Contains(t, err.Error(), "boom", "the panic's value is in the error")
			assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/locks"), "no lock node left")
			if one {
				assert.True(t, he.Requeued, "requeued, as a failed item is by default")
				assert.Equal(t, []string{"x"}, consumeN(t, ctx, q.ConsumeOne, 1), "the item is delivered again")
			} else {
				assert.True(t, he.DeadLettered, "given up on after its one attempt: moved to the dead-letter path")
				assert.Len(t, testutil.Children(t, srv.ConnectString(), base+"/dead"), 1)
				assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/q"))
			}
		})
	}
}
