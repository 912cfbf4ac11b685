package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
)

// held is what the scenarios need of any lease.
type held interface {
	Release(ctx context.Context) error
	Done() <-chan struct{}
}

type tokened interface {
	Token(ctx context.Context) (int64, error)
}

// lockRecipe describes how workers of one recipe take their lease.
type lockRecipe struct {
	name      string
	maxShared int
	paths     func(base string) []string
	// worker returns worker w's acquire function on client c, and whether its holds
	// are exclusive.
	worker func(t *testing.T, c *framework.Client, base string, w int) (func(context.Context) (held, error), bool)
}

func asHeld[L held](f func(context.Context) (L, error)) func(context.Context) (held, error) {
	return func(ctx context.Context) (held, error) {
		l, err := f(ctx)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

var lockRecipes = []lockRecipe{
	{name: "mutex", maxShared: 1, paths: func(b string) []string { return []string{b + "/m"} },
		worker: func(t *testing.T, c *framework.Client, b string, _ int) (func(context.Context) (held, error), bool) {
			m, err := mutex.New(c, b+"/m")
			require.NoError(t, err)
			return asHeld(m.Acquire), true
		}},
	{name: "semaphore-2", maxShared: 2, paths: func(b string) []string { return []string{b + "/s/leases", b + "/s/locks"} },
		worker: func(t *testing.T, c *framework.Client, b string, _ int) (func(context.Context) (held, error), bool) {
			s, err := semaphore.New(c, b+"/s", 2)
			require.NoError(t, err)
			return asHeld(s.Acquire), false
		}},
	{name: "rwlock", maxShared: 1 << 20, paths: func(b string) []string { return []string{b + "/rw"} },
		worker: func(t *testing.T, c *framework.Client, b string, w int) (func(context.Context) (held, error), bool) {
			rw, err := rwlock.New(c, b+"/rw")
			require.NoError(t, err)
			if w%2 == 0 {
				return asHeld(rw.WriteLock().Acquire), true
			}
			return asHeld(rw.ReadLock().Acquire), false
		}},
	{name: "multilock", maxShared: 1, paths: func(b string) []string { return []string{b + "/a", b + "/b"} },
		worker: func(t *testing.T, c *framework.Client, b string, _ int) (func(context.Context) (held, error), bool) {
			ml, err := multilock.NewFromPaths(c, b+"/a", b+"/b")
			require.NoError(t, err)
			return asHeld(ml.Acquire), true
		}},
}

// livenessBound is how long after a fault heals every worker must have finished: the
// victim's session timeout, an election, and slack for a loaded 2-core machine.
const livenessBound = victimSession + 10*time.Second + 30*time.Second

// runLocks runs workers of recipe r on every client of e, injects f once they are busy,
// heals it, and checks overlap, fencing, liveness and cleanliness.
// outcome is what a scenario counted, for the soak report.
type outcome struct {
	holds, violations, lostUpdates, leaked int
	unnoticed                              int // overlaps under a fault no client can notice in time
}

func runLocks(t *testing.T, r lockRecipe, f fault, rounds int) outcome {
	e := newEnv(t, 2)
	ov := newOverlap(r.maxShared)
	st := &store{fenced: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	finished := make(chan time.Time, 16)
	var losses atomic.Int64 // leases whose Done closed during the critical section
	workers := 0
	for ci, c := range e.clients() {
		for g := 0; g < 2; g++ {
			w := ci*2 + g
			acquire, excl := r.worker(t, c, e.base, w)
			workers++
			wg.Add(1)
			go func() {
				defer wg.Done()
				for done := 0; done < rounds && ctx.Err() == nil; {
					actx, acancel := context.WithTimeout(ctx, 15*time.Second)
					l, err := acquire(actx)
					acancel()
					if err != nil {
						select {
						case <-ctx.Done():
						case <-time.After(50 * time.Millisecond):
						}
						continue
					}
					ov.enter(excl)
					if tk, ok := l.(tokened); ok && excl {
						tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
						tok, err := tk.Token(tctx)
						tcancel()
						v := st.read()
						select {
						case <-l.Done(): // possibly lost: do not write
						default:
							if err == nil {
								st.write(tok, v)
							}
						}
					}
					select {
					case <-time.After(20 * time.Millisecond):
					case <-l.Done():
						losses.Add(1)
					}
					ov.exit(excl)
					rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
					_ = l.Release(rctx) // a lost lease reports it; its node is removed anyway
					rcancel()
					done++
				}
				finished <- time.Now()
			}()
		}
	}
	// Inject the fault once the workers are busy.
	require.Eventually(t, func() bool { n, _ := ov.counts(); return n >= workers }, 60*time.Second, 10*time.Millisecond)
	heal := f.inject(t, e)
	time.Sleep(f.hold)
	heal()
	healed := time.Now()
	waitDone := make(chan struct{})
	go func() { wg.Wait(); close(waitDone) }()
	select {
	case <-waitDone:
	case <-time.After(livenessBound):
		cancel()
		<-waitDone
		t.Errorf("liveness: workers still busy %v after the fault healed", livenessBound)
	}
	close(finished)
	late := 0
	for at := range finished {
		if !assert.LessOrEqual(t, at.Sub(healed), livenessBound, "liveness") {
			late++
		}
	}
	count(t, "liveness", checkCount{ops: workers, violations: late})
	entries, violations := ov.counts()
	unnoticed := 0
	if f.unnoticeable {
		// Not a promise the client can keep (see fault); fencing below must still hold.
		t.Logf("overlap under %s (which a client cannot notice in time): %d", f.name, violations)
		unnoticed, violations = violations, 0
	}
	assert.Zero(t, violations, "overlap: more holders than allowed")
	count(t, "overlap", checkCount{ops: entries, violations: violations})
	if f.unnoticeable {
		count(t, "overlap-unnoticed", checkCount{ops: entries, violations: unnoticed})
	}
	accepted, rejected, lost := st.counts()
	assert.Zero(t, lost, "fencing: an accepted write lost an update")
	count(t, "fencing", checkCount{ops: accepted + rejected, violations: lost})
	t.Logf("%s under %s: %d holds, %d ended early by Done, store accepted %d rejected %d",
		r.name, f.name, entries, losses.Load(), accepted, rejected)
	leaked := e.problems(30*time.Second, r.paths(e.base)...)
	for _, p := range leaked {
		t.Error("cleanliness: " + p)
	}
	return outcome{holds: entries, violations: violations, lostUpdates: lost, leaked: len(leaked), unnoticed: unnoticed}
}

// The lock recipes run under every fault in TestUnderFaults; the mutex under the
// partitions between servers too.
func init() {
	for _, r := range lockRecipes {
		registerScenario(r.name, r.name == "mutex", func(t *testing.T, f fault) { runLocks(t, r, f, 3) })
	}
}

// The overlap checker sees a violation when a holder ignores Done: the negative control.
// With Done honoured, the same scenario has none.
func TestOverlapCheckerNegativeControl(t *testing.T) {
	for _, honourDone := range []bool{false, true} {
		t.Run(fmt.Sprintf("honourDone=%v", honourDone), func(t *testing.T) {
			leakcheck.Check(t)
			e := newEnv(t, 1)
			ov := newOverlap(1)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			mv, err := mutex.New(e.victim, e.base+"/m")
			require.NoError(t, err)
			mo, err := mutex.New(e.others[0], e.base+"/m")
			require.NoError(t, err)
			lv, err := mv.Acquire(ctx)
			require.NoError(t, err)
			ov.enter(true)
			exited := make(chan struct{})
			go func() {
				if honourDone {
					<-lv.Done()
				} else {
					time.Sleep(3 * victimSession) // works on, ignoring Done
				}
				ov.exit(true)
				close(exited)
			}()
			e.proxy.Stall() // the victim's session expires; the other client gets the lock
			lo, err := mo.Acquire(ctx)
			require.NoError(t, err)
			ov.enter(true)
			ov.exit(true)
			require.NoError(t, lo.Release(ctx))
			e.proxy.Heal()
			<-exited
			_ = lv.Release(ctx)
			_, violations := ov.counts()
			if honourDone {
				assert.Zero(t, violations)
			} else {
				assert.Positive(t, violations, "the checker must see the holder that ignored Done")
			}
			e.checkClean(e.base + "/m")
		})
	}
}

// The liveness and cleanliness checkers fail on a lock node nobody will ever delete:
// their negative control.
func TestLivenessAndCleanlinessNegativeControl(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A persistent impostor lock node, first in line, that no session owns.
	_, err := e.victim.Create(ctx, e.base+"/m/_c_00000000-0000-4000-8000-000000000000-lock-", nil,
		framework.WithMode(framework.PersistentSequential), framework.WithContainerParents())
	require.NoError(t, err)
	m, err := mutex.New(e.victim, e.base+"/m")
	require.NoError(t, err)
	actx, acancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = m.Acquire(actx)
	acancel()
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "liveness: the waiter cannot finish: %v", err)
	problems := e.problems(2*time.Second, e.base+"/m")
	assert.NotEmpty(t, problems, "cleanliness must report the node left behind")
	// Quietly: the lock path is a container, which the server may reap first.
	require.NoError(t, e.victim.Delete(ctx, e.base+"/m", framework.WithChildren(), framework.Quietly()))
	e.checkClean(e.base + "/m")
}
