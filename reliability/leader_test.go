package reliability_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/recipes/leader"
)

// runLatch: a leader latch on every client (the victim's too); the overlap checker counts
// a leader from the start of its term until the term's Done. After the fault heals there
// must be a leader again within the bound; there must never be two.
func runLatch(t *testing.T, f fault) {
	e := newEnv(t, 2)
	path := e.base + "/latch"
	ov := newOverlap(1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var latches []*leader.Latch
	for i, c := range e.clients() {
		l, err := leader.NewLatch(c, path, fmt.Sprintf("p%d", i))
		require.NoError(t, err)
		l.AddListener(func(isLeader bool) {
			if !isLeader {
				return
			}
			term, err := l.Term()
			if err != nil {
				return // the term ended before we heard of it
			}
			ov.enter(true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-term.Done()
				ov.exit(true)
			}()
		})
		require.NoError(t, l.Start(ctx))
		latches = append(latches, l)
	}
	hasLeader := func() bool {
		for _, l := range latches {
			if l.HasLeadership() {
				return true
			}
		}
		return false
	}
	require.Eventually(t, hasLeader, 30*time.Second, 20*time.Millisecond)
	heal := f.inject(t, e)
	time.Sleep(f.hold)
	heal()
	lively := assert.Eventually(t, hasLeader, livenessBound, 50*time.Millisecond, "liveness: no leader after the fault healed")
	count(t, "liveness", checkCount{ops: 1, violations: btoi(!lively)})
	for _, l := range latches {
		require.NoError(t, l.Close())
	}
	wg.Wait()
	entries, violations := ov.counts()
	if f.unnoticeable {
		t.Logf("overlapping terms under %s (which a client cannot notice in time): %d", f.name, violations)
		violations = 0
	}
	assert.Zero(t, violations, "two leaders at once")
	count(t, "overlap", checkCount{ops: entries, violations: violations})
	t.Logf("latch under %s: %d terms", f.name, entries)
	e.checkClean(path)
}

// The leader latch runs under every fault in TestUnderFaults, and under the partitions
// between servers too.
func init() { registerScenario("latch", true, runLatch) }
