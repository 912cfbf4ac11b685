package reliability_test

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"testing"
)

// The soak's counts per fault × recipe × checker. A scenario reports what each of its
// checkers looked at with count; the soak (TestSoak) collects the counts of the rounds it
// runs and prints them as a table. Outside the soak nobody collects and count does
// nothing.

// checkCount is what one checker counted in one round: operations it looked at (holds,
// terms, history operations, increments, recipe paths), violations it found, operations
// whose outcome was unknown, and nodes (or watches) left behind.
type checkCount struct {
	ops, violations, unknown, leaked int
}

// roundCounts is one round's counts, per checker.
type roundCounts struct {
	mu sync.Mutex
	by map[string]checkCount
}

// collectors maps a round's *testing.T to its roundCounts, while the soak runs it.
var collectors sync.Map

// count adds c to checker's counts of t's round, if the soak collects them.
func count(t testing.TB, checker string, c checkCount) {
	v, ok := collectors.Load(t)
	if !ok {
		return
	}
	rc := v.(*roundCounts)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	s := rc.by[checker]
	s.ops += c.ops
	s.violations += c.violations
	s.unknown += c.unknown
	s.leaked += c.leaked
	rc.by[checker] = s
}

// collect runs fn(t) and returns what it counted; failed reports whether t failed.
func collect(t *testing.T, fn func(t *testing.T)) map[string]checkCount {
	rc := &roundCounts{by: map[string]checkCount{}}
	collectors.Store(t, rc)
	defer collectors.Delete(t)
	fn(t)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.by
}

type tallyKey struct{ fault, recipe, checker string }

// tallyRow is a table row: rounds that ran the checker, and the sums of its counts.
type tallyRow struct {
	rounds int
	checkCount
}

// tally is the soak's table.
type tally struct {
	rows map[tallyKey]*tallyRow
}

func newTally() *tally { return &tally{rows: map[tallyKey]*tallyRow{}} }

// add records one round of recipe under fault: its checkers' counts, and the round itself
// (checker "round": violations are failed rounds, whatever failed them).
func (ta *tally) add(fault, recipe string, counts map[string]checkCount, failed bool) {
	round := checkCount{ops: 0}
	if failed {
		round.violations = 1
	}
	ta.addOne(tallyKey{fault, recipe, "round"}, round)
	for checker, c := range counts {
		ta.addOne(tallyKey{fault, recipe, checker}, c)
	}
}

func (ta *tally) addOne(k tallyKey, c checkCount) {
	r := ta.rows[k]
	if r == nil {
		r = &tallyRow{}
		ta.rows[k] = r
	}
	r.rounds++
	r.ops += c.ops
	r.violations += c.violations
	r.unknown += c.unknown
	r.leaked += c.leaked
}

// print writes the table, one "soak:" line per fault × recipe × checker, sorted, then the
// totals per checker.
func (ta *tally) print(w io.Writer) {
	keys := make([]tallyKey, 0, len(ta.rows))
	totals := map[string]*tallyRow{}
	for k, r := range ta.rows {
		keys = append(keys, k)
		t := totals[k.checker]
		if t == nil {
			t = &tallyRow{}
			totals[k.checker] = t
		}
		t.rounds += r.rounds
		t.ops += r.ops
		t.violations += r.violations
		t.unknown += r.unknown
		t.leaked += r.leaked
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.fault != b.fault {
			return a.fault < b.fault
		}
		if a.recipe != b.recipe {
			return a.recipe < b.recipe
		}
		return a.checker < b.checker
	})
	line := func(f, r, c string, row *tallyRow) {
		fmt.Fprintf(w, "soak: %-27s %-15s %-18s %6d %8d %10d %7d %6d\n", f, r, c, row.rounds, row.ops, row.violations, row.unknown, row.leaked)
	}
	fmt.Fprintf(w, "soak: %-27s %-15s %-18s %6s %8s %10s %7s %6s\n", "fault", "recipe", "checker", "rounds", "ops", "violations", "unknown", "leaked")
	for _, k := range keys {
		line(k.fault, k.recipe, k.checker, ta.rows[k])
	}
	checkers := make([]string, 0, len(totals))
	for c := range totals {
		checkers = append(checkers, c)
	}
	sort.Strings(checkers)
	for _, c := range checkers {
		line("all", "all", c, totals[c])
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
