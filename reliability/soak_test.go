package reliability_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
)

// TestSoak runs random scenario × fault rounds for -soak (make soak), or one round by
// default, one at a time, and prints the counts per fault × recipe × checker (tally_test.go):
// rounds, operations, violations, unknown outcomes, nodes left behind; then the totals,
// and the path of porcupine's visualisation of the first rejected history, if any.
// The scenarios are those of TestUnderFaults (every registered recipe), under every fault
// and every partition between servers; every fourth round records the history workloads
// (a longer variant than the fast profile's) under a fault of their own choice.
func TestSoak(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(*soakSeed), 0))
	hrng := rand.New(rand.NewPCG(uint64(*soakSeed), 1))
	deadline := time.Now().Add(*soakFor)
	ta := newTally()
	var rounds, injected, failedRounds int
	var others []scenario
	for _, s := range scenarios {
		if s.name != "history" {
			others = append(others, s)
		}
	}
	all := scenarioFaults(true)
	round := func(name string, f fault, run func(t *testing.T, f fault)) {
		var counts map[string]checkCount
		ok := t.Run(fmt.Sprintf("%03d-%s-%s", rounds, name, f.name), func(t *testing.T) {
			leakcheck.Check(t)
			counts = collect(t, func(t *testing.T) { run(t, f) })
		})
		ta.add(f.name, name, counts, !ok)
		rounds++
		if f.name != "none" {
			injected++
		}
		if !ok {
			failedRounds++
		}
	}
	for rounds == 0 || time.Now().Before(deadline) {
		if rounds%4 == 3 {
			round("history", all[hrng.IntN(len(all))], func(t *testing.T, f fault) {
				assert.Zero(t, runHistory(t, f, histSoak).violations)
			})
			continue
		}
		s := others[rng.IntN(len(others))]
		round(s.name, all[rng.IntN(len(all))], s.run)
	}
	fmt.Fprintf(os.Stdout, "soak: %d rounds, %d with a fault injected, %d failed (seed %d)\n", rounds, injected, failedRounds, *soakSeed)
	fmt.Fprintln(os.Stdout, "soak: ops are holds (overlap), accepted and rejected writes (fencing), operations (linearizability),")
	fmt.Fprintln(os.Stdout, "soak: increments (increments), workers (liveness), checks (cleanliness: leaked counts what was left);")
	fmt.Fprintln(os.Stdout, "soak: overlap-unnoticed counts overlaps under a fault no client can notice in time (fencing covers them);")
	fmt.Fprintln(os.Stdout, "soak: round's violations are failed rounds, whatever failed them")
	ta.print(os.Stdout)
	if p := firstVisualisation.Load(); p != nil {
		fmt.Fprintf(os.Stdout, "soak: porcupine's visualisation of the first rejected history: %s\n", *p)
	} else {
		fmt.Fprintln(os.Stdout, "soak: no history was rejected (no visualisation written)")
	}
}
