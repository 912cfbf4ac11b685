package reliability_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/recipes/sharedcount"
)

// countOutcomes counts what one worker's compare-and-set increments returned.
type countOutcomes struct {
	applied, conflicts, unknown, failed int
}

// runSharedCount: the victim and another client each keep a SharedCount on one node and
// increment it with TrySet (read the cached value and version, write value+1 at that
// version) before, during and after the fault. Each TrySet that returned nil was applied
// exactly once, a conflict or another error not at all, an unknown outcome at most once:
// the node ends between the applied count and that plus the unknown ones. After the
// fault heals, both caches come back to the node's value within the liveness bound (the
// watch is set again after a reconnect or a new session), and nothing is left.
func runSharedCount(t *testing.T, f fault) {
	e := newEnv(t, 1)
	path := e.base + "/count"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	counts := make([]*sharedcount.Count, 2)
	for i, c := range e.clients() {
		sc, err := sharedcount.New(c, path, 0)
		require.NoError(t, err)
		require.NoError(t, sc.Start(ctx))
		defer sc.Close()
		counts[i] = sc
	}

	stop := make(chan struct{})
	outcomes := make([]countOutcomes, len(counts)) // each worker's, read after wg.Wait
	applied := make([]atomic.Int64, len(counts))   // each worker's applied increments, read while it runs
	var wg sync.WaitGroup
	for i, sc := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outcomes[i]
			for {
				select {
				case <-stop:
					return
				default:
				}
				v, err := sc.Get()
				if err != nil {
					o.failed++
					pause(stop) // not connected: pace the loop
					continue
				}
				wctx, wcancel := context.WithTimeout(ctx, time.Second)
				err = sc.TrySet(wctx, v, v.Value+1)
				wcancel()
				switch {
				case err == nil:
					o.applied++
					applied[i].Add(1)
				case errors.Is(err, sharedcount.ErrConflict):
					o.conflicts++
				case errors.Is(err, sharedcount.ErrUnknownOutcome):
					o.unknown++
				default:
					o.failed++
					pause(stop)
				}
			}
		}()
	}
	// Let both workers get some increments in before and after the fault.
	waitApplied := func(what string) {
		require.Eventually(t, func() bool {
			v, err := counts[1].Get()
			return err == nil && v.Value >= 10
		}, livenessBound, 10*time.Millisecond, "no increments %s", what)
	}
	waitApplied("before the fault")
	heal := f.inject(t, e)
	time.Sleep(f.hold)
	heal()
	healed := time.Now()
	before := applied[0].Load()
	require.Eventually(t, func() bool { return applied[0].Load() > before }, livenessBound, 10*time.Millisecond,
		"liveness: none of the victim's increments gets through after the fault")
	close(stop)
	wg.Wait()

	var sum countOutcomes
	for _, o := range outcomes {
		sum.applied += o.applied
		sum.conflicts += o.conflicts
		sum.unknown += o.unknown
		sum.failed += o.failed
	}
	t.Logf("increments: %+v (victim %+v); victim's increments through %v after the fault healed", sum, outcomes[0], time.Since(healed))
	var final int32
	var decodeErr error
	require.Eventually(t, func() bool {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		defer rcancel()
		if err := e.others[0].Sync(rctx, path); err != nil {
			return false
		}
		data, _, err := e.others[0].GetData(rctx, path)
		if err != nil {
			return false
		}
		if final, decodeErr = sharedcount.Decode(path, data); decodeErr != nil {
			return true // reported below
		}
		for _, sc := range counts {
			if v, err := sc.Get(); err != nil || v.Value != final {
				return false
			}
		}
		return true
	}, livenessBound, 50*time.Millisecond, "liveness: the caches do not come back to the node's value")
	require.NoError(t, decodeErr)
	lost := !assert.GreaterOrEqual(t, int(final), sum.applied, "an increment reported applied was lost")
	extra := !assert.LessOrEqual(t, int(final), sum.applied+sum.unknown, "an increment was applied that was reported not applied, or applied twice")
	count(t, "increments", checkCount{ops: sum.applied + sum.conflicts + sum.unknown, unknown: sum.unknown, violations: btoi(lost) + btoi(extra)})

	for _, sc := range counts {
		require.NoError(t, sc.Close())
	}
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	require.NoError(t, e.others[0].Delete(dctx, path)) // the count is persistent by design
	e.checkClean()
}

// pause waits a little, or until stop is closed.
func pause(stop <-chan struct{}) {
	select {
	case <-stop:
	case <-time.After(20 * time.Millisecond):
	}
}

// The shared count runs under every fault in TestUnderFaults.
func init() { registerScenario("sharedcount", false, runSharedCount) }
