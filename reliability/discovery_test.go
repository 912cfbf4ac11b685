package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// discoveryFastFaults are the faults the fast profile runs discovery under: the ones
// that exercise its own paths (a re-registration after a new session, a provider whose
// cache goes stale, a create whose reply is lost). The soak and -partitions run every
// fault.
var discoveryFastFaults = map[string]bool{"drop-connections": true, "long-stall-session-expires": true, "ghost-create": true}

// staleWindow is how long a provider may hand out an instance whose node is gone: until
// its client reports the session lost (it notices the silence within the session
// timeout, then waits the session timeout), plus slack for a loaded 2-core machine.
const staleWindow = 2*victimSession + 3*time.Second

// peerNotice is how long a member cut off from its peers keeps serving its clients
// before it notices (syncLimit × tickTime): under a peer fault the victim's client hears
// nothing wrong for that long, so its window starts that much later.
const peerNotice = 5 * time.Second

// windowFor is the staleness bound under fault f.
func windowFor(f fault) time.Duration {
	for _, p := range peerFaults {
		if p.name == f.name {
			return staleWindow + peerNotice
		}
	}
	return staleWindow
}

type discoveryOutcome struct {
	staleMax time.Duration // the longest a deleted instance was handed out after its delete returned
	checks   int
	// vanished is the longest the victim's (kept) instance was missing from the server,
	// as a client of the ensemble (not behind the victim's proxy) saw it: from the first
	// read that found no node to the first that found one again, polled every 10 ms.
	vanished time.Duration
	looks    int // reads of the victim's node that were answered
}

// runDiscovery: the victim registers an instance and follows the service with a
// provider; another client registers two instances, and deletes one while the fault
// lasts; the victim registers a second (sequential) instance while the fault lasts. A
// checker asks the victim's provider every few milliseconds: it must never hand out the
// deleted instance longer than staleWindow after the delete returned. After the heal,
// within the liveness bound, both providers list exactly what the server holds, each
// registered instance has exactly one node (the victim's owned by its current session),
// and once everything is closed nothing is left: no node, watch or ephemeral.
func runDiscovery(t *testing.T, f fault) discoveryOutcome {
	e := newEnv(t, 1)
	base := e.base + "/services"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var reRegistered atomic.Int32
	var statesMu sync.Mutex
	var states []string
	removeStates := e.victim.AddListener(func(st framework.State) {
		statesMu.Lock()
		states = append(states, st.String())
		statesMu.Unlock()
	})
	defer removeStates()
	_, firstSession := e.victim.Session()
	vd, err := discovery.New[string](e.victim, base, discovery.WithRegistrationListener(func(r discovery.Registered) {
		if r.Again {
			reRegistered.Add(1)
		}
	}))
	require.NoError(t, err)
	defer vd.Close()
	od, err := discovery.New[string](e.others[0], base)
	require.NoError(t, err)
	defer od.Close()

	mk := func(id string, st discovery.ServiceType) *discovery.Instance[string] {
		inst, err := discovery.NewInstance("svc", id, discovery.WithID(id), discovery.WithAddress("10.0.0.1"),
			discovery.WithPort(80), discovery.WithServiceType(st))
		require.NoError(t, err)
		return inst
	}
	victim, stays, doomed := mk("victim", discovery.Dynamic), mk("stays", discovery.Dynamic), mk("doomed", discovery.Dynamic)
	late := mk("late-", discovery.DynamicSequential)
	require.NoError(t, vd.Register(ctx, victim))
	require.NoError(t, od.Register(ctx, stays))
	require.NoError(t, od.Register(ctx, doomed))
	vp, err := discovery.NewProvider(vd, "svc")
	require.NoError(t, err)
	require.NoError(t, vp.Start(ctx))
	op, err := discovery.NewProvider(od, "svc")
	require.NoError(t, err)
	require.NoError(t, op.Start(ctx))

	// The checker.
	var (
		mu      sync.Mutex
		gone    time.Time // when doomed's delete returned
		outcome discoveryOutcome
	)
	stop := make(chan struct{})
	checked := make(chan struct{})
	watched := make(chan struct{})
	go func() { // how long the victim's instance is missing from the server
		defer close(watched)
		var missingSince time.Time
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				mu.Lock()
				if !missingSince.IsZero() {
					outcome.vanished = max(outcome.vanished, time.Since(missingSince))
				}
				mu.Unlock()
				return
			case <-tick.C:
			}
			lctx, lcancel := context.WithTimeout(ctx, time.Second)
			st, err := e.others[0].Exists(lctx, base+"/svc/victim")
			lcancel()
			if err != nil {
				continue
			}
			now := time.Now()
			mu.Lock()
			outcome.looks++
			switch {
			case st == nil && missingSince.IsZero():
				missingSince = now
			case st != nil && !missingSince.IsZero():
				outcome.vanished = max(outcome.vanished, now.Sub(missingSince))
				missingSince = time.Time{}
			}
			mu.Unlock()
		}
	}()
	go func() {
		defer close(checked)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			all, err := vp.GetAllInstances()
			mu.Lock()
			outcome.checks++
			if err == nil && !gone.IsZero() {
				for _, i := range all {
					if i.ID == "doomed" {
						if d := time.Since(gone); d > outcome.staleMax {
							outcome.staleMax = d
						}
					}
				}
			}
			mu.Unlock()
		}
	}()

	heal := f.inject(t, e)
	var wg sync.WaitGroup
	var lateErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
			err := od.Unregister(dctx, doomed)
			dcancel()
			if err == nil {
				mu.Lock()
				gone = time.Now()
				mu.Unlock()
				return
			}
			if errors.Is(err, discovery.ErrNotRegistered) { // an earlier attempt stopped keeping it
				if st, err := e.others[0].Exists(ctx, base+"/svc/doomed"); err == nil && st == nil {
					mu.Lock()
					gone = time.Now()
					mu.Unlock()
					return
				}
			}
			if ctx.Err() != nil {
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		rctx, rcancel := context.WithTimeout(ctx, f.hold+5*time.Second)
		defer rcancel()
		lateErr = vd.Register(rctx, late)
	}()
	time.Sleep(f.hold)
	heal()
	wg.Wait()
	t.Logf("late registration during the fault: %v; re-registrations: %d", lateErr, reRegistered.Load())

	// After the heal: both providers converge on the server's registry.
	want := []string{"stays", "victim"}
	if lateErr == nil {
		want = []string{"late-", "stays", "victim"}
	}
	ids := func(p *discovery.ServiceProvider[string]) string {
		all, err := p.GetAllInstances()
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, i := range all {
			out = append(out, i.ID)
		}
		return strings.Join(out, ",")
	}
	var lastV, lastO string
	if !assert.Eventually(t, func() bool {
		lastV, lastO = ids(vp), ids(op)
		return lastV == strings.Join(want, ",") && lastO == lastV
	}, livenessBound, 50*time.Millisecond) {
		kids, err := zktest.Children(ctx, ens.ConnectString(), base+"/svc")
		t.Fatalf("providers: victim's %q, other's %q, want %q; on the server: %q (%v)", lastV, lastO, want, kids, err)
	}
	var kids []string
	if !assert.Eventually(t, func() bool {
		kids, err = zktest.Children(ctx, ens.ConnectString(), base+"/svc")
		return err == nil && len(kids) == len(want)
	}, livenessBound, 50*time.Millisecond) {
		t.Fatalf("one node per instance: %q (%v)", kids, err)
	}
	// Once the victim's client has its session (a new one if it gave the old up), the
	// node is that session's: the registry replaces its node of a session given up at
	// once, it does not wait for the server to expire that session. The
	// bound is slack for a loaded machine, not the time the replacement takes.
	var vst *zk.Stat
	if !assert.Eventually(t, func() bool {
		vst, err = e.others[0].Exists(ctx, base+"/svc/victim")
		st := e.victim.State()
		connected := st == framework.Connected || st == framework.Reconnected
		return err == nil && vst != nil && connected && vst.EphemeralOwner == e.victim.SessionID()
	}, victimSession, 10*time.Millisecond) {
		owner := int64(0)
		if vst != nil {
			owner = vst.EphemeralOwner
		}
		t.Errorf("the victim's instance is not owned by its current session 0x%x %v after the providers converged: owner 0x%x (%v)",
			e.victim.SessionID(), victimSession, owner, err)
	}

	close(stop)
	<-checked
	<-watched
	mu.Lock()
	o := outcome
	mu.Unlock()
	statesMu.Lock()
	t.Logf("the victim's instance was missing from the server for at most %v (%d looks); the victim's states %v, session 0x%x then 0x%x",
		o.vanished, o.looks, states, firstSession, e.victim.SessionID())
	statesMu.Unlock()
	window := windowFor(f)
	assert.LessOrEqual(t, o.staleMax, window, "a deleted instance was handed out %v after its delete", o.staleMax)
	t.Logf("deleted instance handed out at most %v after its delete (window %v), %d checks", o.staleMax, window, o.checks)

	require.NoError(t, vp.Close())
	require.NoError(t, op.Close())
	require.NoError(t, vd.Close())
	require.NoError(t, od.Close())
	e.checkClean(base + "/svc")
	return o
}

func TestDiscoveryUnderFaults(t *testing.T) {
	var worst time.Duration
	var vanished []string
	for _, f := range scenarioFaults(false) {
		if !discoveryFastFaults[f.name] && *soakFor == 0 && !*allPartitions {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			leakcheck.Check(t)
			o := runDiscovery(t, f)
			worst = max(worst, o.staleMax)
			vanished = append(vanished, fmt.Sprintf("%s %v", f.name, o.vanished.Round(time.Millisecond)))
		})
	}
	fmt.Printf("discovery: longest a deleted instance was handed out: %v (window %v, %v under peer faults)\n", worst, staleWindow, staleWindow+peerNotice)
	fmt.Printf("discovery: longest the victim's kept instance was missing from the server, by fault: %s\n", strings.Join(vanished, ", "))
}
