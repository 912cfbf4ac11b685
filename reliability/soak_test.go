package reliability_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
)

// TestSoak runs random recipe × fault rounds for -soak (make soak), or one round by
// default, and prints the counts: rounds, faults injected, violations, nodes leaked.
func TestSoak(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(*soakSeed), 0))
	deadline := time.Now().Add(*soakFor)
	var rounds, injected, failedRounds int
	var total outcome
	// Every fourth round also records the history workloads (a longer variant of
	// TestHistoryUnderFaults) under a fault of their own choice.
	hrng := rand.New(rand.NewPCG(uint64(*soakSeed), 1))
	var histRounds, histFailed int
	var hist histOutcome
	for rounds == 0 || time.Now().Before(deadline) {
		if rounds%4 == 3 {
			f := faults[hrng.IntN(len(faults))]
			var o histOutcome
			if !t.Run(fmt.Sprintf("%03d-history-%s", rounds, f.name), func(t *testing.T) {
				leakcheck.Check(t)
				o = runHistory(t, f, histSoak)
			}) {
				histFailed++
			}
			histRounds++
			hist.ops += o.ops
			hist.unknown += o.unknown
			hist.violations += o.violations
			hist.undecided += o.undecided
		}
		r := lockRecipes[rng.IntN(len(lockRecipes))]
		all := scenarioFaults(true)
		f := all[rng.IntN(len(all))]
		var o outcome
		ok := t.Run(fmt.Sprintf("%03d-%s-%s", rounds, r.name, f.name), func(t *testing.T) {
			leakcheck.Check(t)
			o = runLocks(t, r, f, 3)
		})
		rounds++
		if f.name != "none" {
			injected++
		}
		if !ok {
			failedRounds++
		}
		total.holds += o.holds
		total.violations += o.violations + o.lostUpdates
		total.leaked += o.leaked
		total.unnoticed += o.unnoticed
	}
	fmt.Fprintf(os.Stdout, "soak: rounds %d, faults injected %d, lock holds %d, violations %d, nodes leaked %d, failed rounds %d "+
		"(overlaps under a stopped leader, which no client can notice in time and fencing covers: %d)\n",
		rounds, injected, total.holds, total.violations, total.leaked, failedRounds, total.unnoticed)
	fmt.Fprintf(os.Stdout, "soak: history rounds %d, operations %d, unknown outcomes %d, non-linearizable histories %d, undecided %d, failed rounds %d\n",
		histRounds, hist.ops, hist.unknown, hist.violations, hist.undecided, histFailed)
	if p := firstVisualisation.Load(); p != nil {
		fmt.Fprintf(os.Stdout, "soak: porcupine's visualisation of the first rejected history: %s\n", *p)
	}
}
