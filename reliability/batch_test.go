package reliability_test

import (
	"cmp"
	"flag"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
)

// The fault-major runner. Most of the fast profile's time is waiting: a fault's hold, a
// session timeout, a member restarting, an election. TestUnderFaults runs every
// registered scenario under one fault at a time, all of them at once, each in its own
// world (its own proxy, clients and base path, see newEnv). A fault that acts on the
// whole ensemble (a killed or paused leader, a lost quorum: fault.shared) is injected
// once for all of them, when every scenario has reached the moment it injects at, and
// healed once every scenario has asked for it: each scenario sees the fault exactly as
// it would alone, and the ensemble's waits are paid once per fault instead of once per
// scenario. Goroutine leaks are checked per fault, once its scenarios are over (a
// per-scenario check would see its neighbours' goroutines).
//
// A scenario registers with registerScenario (in an init function of its file); a
// Test…UnderFaults function that loops over scenarioFaults itself still works, it just
// runs on its own, one fault after the other.

// scenario is one recipe's run under a fault.
type scenario struct {
	name string
	// wide runs the partitions between servers (peerFaults) on it in the fast profile
	// too (see scenarioFaults).
	wide bool
	run  func(t *testing.T, f fault)
}

var scenarios []scenario

// registerScenario adds a scenario to TestUnderFaults (and to the soak).
func registerScenario(name string, wide bool, run func(t *testing.T, f fault)) {
	scenarios = append(scenarios, scenario{name: name, wide: wide, run: run})
}

var batchSize = flag.Int("batch", 0, "how many scenarios TestUnderFaults runs at once under one fault (0: all of them; 1: one after the other)")

// batchBound bounds how long a shared fault waits for every scenario to reach it, and how
// long a scenario waits for the fault to be injected or healed: far above a scenario's
// setup (its own bounds are 30 to 60 s) on a loaded 2-core machine.
const batchBound = 3 * time.Minute

// TestUnderFaults runs every registered scenario under every fault of the fault table,
// fault by fault, the scenarios of one fault at once; then the partitions between servers,
// one scenario at a time, on the scenarios marked wide (every scenario with -partitions).
func TestUnderFaults(t *testing.T) {
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			leakcheck.Check(t)
			for ss := range slices.Chunk(scenarios, max(1, cmp.Or(*batchSize, len(scenarios)))) {
				runBatch(t, f, ss)
			}
		})
	}
	for _, f := range peerFaults {
		for _, s := range scenarios {
			if !s.wide && !widePartitions() {
				continue
			}
			t.Run(f.name+"/"+s.name, func(t *testing.T) {
				leakcheck.Check(t)
				s.run(t, f)
			})
		}
	}
}

// runBatch runs the scenarios under f, all at once, each as a subtest of t. A shared fault
// is injected and healed once for all of them (see batch).
func runBatch(t *testing.T, f fault, ss []scenario) {
	healthy(t)
	var b *batch
	if f.shared {
		b = newBatch(len(ss))
	}
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ran := false
			t.Run(s.name, func(t *testing.T) {
				ran = true
				if b == nil {
					s.run(t, f)
					return
				}
				m := &member{b: b}
				defer m.leave()
				s.run(t, b.faultFor(f, m))
			})
			if !ran && b != nil {
				// Left out by -run: the batch does not wait for it.
				(&member{b: b}).leave()
			}
		}()
	}
	if b != nil {
		injected := false
		t.Run("inject", func(t *testing.T) {
			injected = true
			b.coordinate(t, f)
		})
		if !injected {
			// -run named scenarios but not "inject": the scenarios still need their fault.
			b.coordinate(t, f)
		}
	}
	wg.Wait()
}

// batch is one shared fault's injection for n scenarios.
type batch struct {
	mu       sync.Mutex
	pending  int // scenarios that have neither reached the fault nor ended
	unhealed int // scenarios that reached the fault and have not asked to heal it nor ended
	changed  chan struct{}
	injected chan struct{} // closed once the fault is in place
	healed   chan struct{} // closed once the fault is healed (or given up)
	ok       bool          // the fault was injected (read after injected or healed is closed)
}

// member is one scenario's part in a batch.
type member struct {
	b                    *batch
	arrived, asked, gone bool
}

func newBatch(n int) *batch {
	return &batch{pending: n, changed: make(chan struct{}, 1), injected: make(chan struct{}), healed: make(chan struct{})}
}

func (b *batch) signal() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

// faultFor is f as scenario m sees it: inject waits until the coordinator has injected
// the fault for everyone, and its heal until the coordinator has healed it.
func (b *batch) faultFor(f fault, m *member) fault {
	g := f
	g.inject = func(t *testing.T, _ *env) func() {
		t.Helper()
		b.mu.Lock()
		if !m.arrived && !m.gone {
			m.arrived = true
			b.pending--
			b.unhealed++
		}
		b.mu.Unlock()
		b.signal()
		select {
		case <-b.injected:
		case <-b.healed:
		case <-time.After(batchBound):
			t.Fatalf("batch: %s was not injected within %v", f.name, batchBound)
		}
		if !b.ok {
			t.Fatalf("batch: %s could not be injected (see the inject subtest)", f.name)
		}
		return func() {
			m.askHeal()
			select {
			case <-b.healed:
			case <-time.After(batchBound):
				t.Errorf("batch: %s was not healed within %v", f.name, batchBound)
			}
		}
	}
	return g
}

func (m *member) askHeal() {
	b := m.b
	b.mu.Lock()
	if m.arrived && !m.asked {
		m.asked = true
		b.unhealed--
	}
	b.mu.Unlock()
	b.signal()
}

// leave ends m's part: a scenario that ended before the fault or before asking to heal it
// no longer holds the others up.
func (m *member) leave() {
	b := m.b
	b.mu.Lock()
	if !m.arrived {
		b.pending--
	} else if !m.asked {
		b.unhealed--
	}
	m.arrived, m.asked, m.gone = true, true, true
	b.mu.Unlock()
	b.signal()
}

// until waits until cond holds (under b.mu) or the bound passes.
func (b *batch) until(cond func() bool) bool {
	deadline := time.NewTimer(batchBound)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		ok := cond()
		b.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-b.changed:
		case <-deadline.C:
			return false
		}
	}
}

// coordinate injects f once every scenario reached it (or ended), and heals it once every
// scenario that reached it asked (or ended). Whatever happens, it releases the scenarios.
func (b *batch) coordinate(t *testing.T, f fault) {
	defer close(b.healed)
	if !b.until(func() bool { return b.pending == 0 }) {
		b.mu.Lock()
		t.Errorf("batch: %d scenario(s) did not reach %s within %v", b.pending, f.name, batchBound)
		b.mu.Unlock()
		return
	}
	b.mu.Lock()
	none := b.unhealed == 0
	b.mu.Unlock()
	if none {
		return // every scenario ended before the fault
	}
	start := time.Now()
	heal := f.inject(t, nil)
	b.ok = true
	close(b.injected)
	if !b.until(func() bool { return b.unhealed == 0 }) {
		t.Errorf("batch: not every scenario asked to heal %s within %v; healing it", f.name, batchBound)
	}
	heal()
	t.Logf("batch: %s held %v", f.name, time.Since(start).Round(time.Millisecond))
}
