package reliability_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
)

// runBarrier: waiters on every client (two on the victim) wait on a barrier; the fault
// is injected, the barrier is removed while it lasts (where the ensemble can take the
// write) and again after it heals; every waiter must return within the bound.
func runBarrier(t *testing.T, f fault) {
	e := newEnv(t, 2)
	path := e.base + "/b"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setter, err := barrier.New(e.others[0], path)
	require.NoError(t, err)
	require.NoError(t, setter.Set(ctx))
	var wg sync.WaitGroup
	results := make(chan error, 8)
	started := make(chan struct{}, 8)
	for _, c := range append([]*framework.Client{e.victim}, e.clients()...) {
		b, err := barrier.New(c, path)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			wctx, wcancel := context.WithTimeout(ctx, livenessBound+2*f.hold+10*time.Second)
			defer wcancel()
			results <- b.Wait(wctx)
		}()
	}
	for i := 0; i < len(e.clients())+1; i++ {
		<-started
	}
	heal := f.inject(t, e)
	time.Sleep(f.hold / 2)
	rctx, rcancel := context.WithTimeout(ctx, time.Second)
	_ = setter.Remove(rctx) // may fail while the ensemble has no quorum
	rcancel()
	time.Sleep(f.hold / 2)
	heal()
	require.NoError(t, setter.Remove(ctx))
	wg.Wait()
	close(results)
	for err := range results {
		count(t, "liveness", checkCount{ops: 1, violations: btoi(!assert.NoError(t, err, "liveness: a waiter did not pass the removed barrier"))})
	}
	e.checkClean(path)
}

// runDoubleBarrier: five members over the clients (two on the victim) enter while the
// fault happens; the last arrives after it heals; all leave. Members on clients the
// fault did not cut off must finish both phases; a victim member may instead learn that
// its session was lost.
func runDoubleBarrier(t *testing.T, f fault) {
	e := newEnv(t, 2)
	path := e.base + "/db"
	const qty = 5
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		victim bool
		err    error
	}
	results := make(chan result, qty)
	var wg sync.WaitGroup
	run := func(c *framework.Client, victim bool) {
		d, err := doublebarrier.New(c, path, qty)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			mctx, mcancel := context.WithTimeout(ctx, livenessBound+f.hold+20*time.Second)
			defer mcancel()
			err := d.Enter(mctx)
			if err == nil {
				err = d.Leave(mctx)
			}
			results <- result{victim, err}
		}()
	}
	run(e.victim, true)
	run(e.victim, true)
	run(e.others[0], false)
	run(e.others[1], false)
	require.Eventually(t, func() bool {
		kids, _, err := e.others[0].Children(ctx, path)
		return err == nil && len(kids) >= qty-1
	}, 30*time.Second, 20*time.Millisecond)
	heal := f.inject(t, e)
	time.Sleep(f.hold)
	heal()
	run(e.others[1], false) // the last member arrives after the fault
	wg.Wait()
	close(results)
	for r := range results {
		if r.victim && errors.Is(r.err, doublebarrier.ErrSessionLost) {
			continue // told clearly that its session was lost while inside
		}
		count(t, "liveness", checkCount{ops: 1, violations: btoi(!assert.NoError(t, r.err, "liveness: member (victim=%v) did not get through", r.victim))})
	}
	e.checkClean(path)
}

// The barriers run under every fault in TestUnderFaults.
func init() {
	registerScenario("barrier", false, runBarrier)
	registerScenario("doublebarrier", false, runDoubleBarrier)
}
