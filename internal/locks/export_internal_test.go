package locks

import (
	"context"
	"testing"
	"time"
)

// setLookupForTest makes the default node data come from fn, from a fresh start (nothing
// found, no failure remembered), until the test ends.
func setLookupForTest(t *testing.T, fn func(ctx context.Context, host string) ([]string, error)) {
	old := localAddr
	localAddr = newLocalAddress(fn)
	t.Cleanup(func() { localAddr = old })
}

// settleForTest waits until no lookup of the default node data is under way, and lets a
// failed lookup be tried again at once.
func settleForTest(ctx context.Context) error {
	if err := localAddr.settle(ctx); err != nil {
		return err
	}
	localAddr.mu.Lock()
	localAddr.retryAt = time.Time{}
	localAddr.mu.Unlock()
	return nil
}
