// Package grace gives a call a bounded time past its caller's context: for the waits a
// recipe makes after that context ended (for a write's outcome, for a clean-up), all of
// them together.
package grace

import (
	"context"
	"sync"
	"time"
)

// After returns a context that ctx's cancellation does not end (its values are kept): it
// ends d after ctx ends, or when the returned cancel func is called, which must be.
func After(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var mu sync.Mutex
	var timer *time.Timer
	stopped := false
	stopAF := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			timer = time.AfterFunc(d, cancel)
		}
	})
	return gctx, func() {
		stopAF()
		mu.Lock()
		stopped = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}
