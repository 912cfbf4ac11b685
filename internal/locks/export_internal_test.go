package locks

import (
	"context"
	"sync"
	"testing"
)

// setLookupForTest makes the default node data come from fn, from a fresh start, until
// the test ends.
func setLookupForTest(t *testing.T, fn func(ctx context.Context, host string) ([]string, error)) {
	old := lookupHost
	lookupHost = fn
	DefaultNodeData = sync.OnceValue(lookupLocalAddress)
	t.Cleanup(func() {
		lookupHost = old
		DefaultNodeData = sync.OnceValue(lookupLocalAddress)
	})
}

// settleForTest waits until no lookup of the default node data is under way.
func settleForTest(ctx context.Context) error { return ctx.Err() }
