package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// Cancellation fuzzing: every blocking call of the framework and of
// the recipes, its context cancelled at a seeded-random moment — before the call, as
// the k-th request goes out, while a request is held in the proxy before the server
// sees it, while the server has applied it and its reply is held, after the connection
// was dropped under it, or while the call waits for a watch — and then checked: the
// call returned nil or the context's error, nothing of the victim's is left (after
// WaitGuaranteedDeletes), the peer's nodes were not touched, no watch is left on the
// servers, no goroutine leaked, and the same call with a fresh context succeeds at once.
//
// ZOOCURATOR_CANCEL_SEED sets the seed (it is logged), ZOOCURATOR_CANCEL_ROUNDS the
// number of rounds (the fast profile's default is small; the soak runs more). Each round
// logs how long the call took to return after the cancel; the test logs the slowest per
// call and moment. ZOOCURATOR_KNOWN_BUGS=1 fails a round slower than slowCancel.

// cancelWorld is one round's clients: the victim behind a proxy, whose requests the
// trigger watches, and a peer connected directly.
type cancelWorld struct {
	t      *testing.T
	proxy  *zktest.Proxy
	victim *framework.Client
	peer   *framework.Client
	base   string
	trig   *trigger
}

// opRound is one operation set up for a round.
type opRound struct {
	// sentinels are the peer's nodes, which must survive whatever the victim does.
	sentinels []string
	// call is the victim's blocking call; on success it returns how to undo it.
	call func(ctx context.Context) (undo func(context.Context) error, err error)
	// after checks the outcome of the cancelled call once guaranteed deletes are done
	// (nil: nothing to check).
	after func(ctx context.Context) error
	// unblock lets a call that waits for the peer through (nil: nothing to do). It runs
	// after the cancelled call returned, before the call is made again.
	unblock func(ctx context.Context) error
	// check verifies an invariant of the operation once both calls are undone (nil: none).
	check func(ctx context.Context) error
	// close ends what the round set up for long (latches, counts); nil: nothing.
	close func()
}

// cancelOp is one blocking call of the API. blocks: the call waits for a watch until
// the peer unblocks it.
type cancelOp struct {
	name   string
	blocks bool
	setup  func(ctx context.Context, w *cancelWorld) (*opRound, error)
}

// trigger acts on the k-th request the victim sends while armed.
type trigger struct {
	mu     sync.Mutex
	armed  bool
	n, k   int
	action func()
	fired  chan struct{}
}

func (tr *trigger) arm(k int, action func()) <-chan struct{} {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.armed, tr.n, tr.k, tr.action, tr.fired = true, 0, k, action, make(chan struct{})
	return tr.fired
}

// disarm stops the trigger; it reports whether it had fired.
func (tr *trigger) disarm() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	fired := tr.fired != nil && !tr.armed
	tr.armed = false
	return fired
}

func (tr *trigger) hook(string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.armed {
		return
	}
	tr.n++
	if tr.n < tr.k {
		return
	}
	tr.armed = false
	tr.action()
	close(tr.fired)
}

// moments at which the victim's context is cancelled.
const (
	momentBefore    = "before"     // cancelled before the call
	momentSend      = "at-send"    // cancelled as the k-th request goes out
	momentStalled   = "stalled"    // the k-th request is held in the proxy, unseen by the server
	momentHeldReply = "held-reply" // the k-th request was applied, its reply is held
	momentDropped   = "dropped"    // the connection dropped as the k-th request went out
)

var moments = []string{momentBefore, momentSend, momentStalled, momentHeldReply, momentDropped}

// knownBugs turns on checks of defects found and not fixed yet (ZOOCURATOR_KNOWN_BUGS=1).
var knownBugs = os.Getenv("ZOOCURATOR_KNOWN_BUGS") == "1"

// slowCancel bounds, under ZOOCURATOR_KNOWN_BUGS=1, how long a call may take to return
// after its context was cancelled: generous for a loaded machine (calls return within
// milliseconds), far below the 10 s cleanup timeout a stalled cleanup waits for.
const slowCancel = 5 * time.Second

func envInt(t *testing.T, name string, def int64) int64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "%s=%q", name, s)
	return v
}

func TestCancellationFuzz(t *testing.T) {
	seed := envInt(t, "ZOOCURATOR_CANCEL_SEED", time.Now().UnixNano())
	rounds := int(envInt(t, "ZOOCURATOR_CANCEL_ROUNDS", 30))
	var until time.Time
	if *soakFor > 0 && os.Getenv("ZOOCURATOR_CANCEL_ROUNDS") == "" {
		until = time.Now().Add(*soakFor / 4) // make soak: a quarter of its time on top
	}
	t.Logf("cancellation fuzz: seed %d (ZOOCURATOR_CANCEL_SEED=%d reproduces it), %d rounds", seed, seed, rounds)
	ran, failed := runCancelFuzz(t, seed, rounds, until)
	if *soakFor > 0 {
		fmt.Fprintf(os.Stdout, "soak: cancellation fuzz seed %d: rounds %d, failed rounds %d\n", seed, ran, failed)
	}
}

// runCancelFuzz runs rounds rounds, or rounds until until when it is set.
func runCancelFuzz(t *testing.T, seed int64, rounds int, until time.Time) (ran, failed int) {
	healthy(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 17))
	worst := map[string]time.Duration{} // op/moment -> slowest return after a cancel
	defer func() {
		var lines []string
		for k, d := range worst {
			lines = append(lines, fmt.Sprintf("%s %v", k, d.Round(time.Millisecond)))
		}
		sort.Strings(lines)
		t.Logf("slowest return after a cancel, per call and moment:\n\t%s", strings.Join(lines, "\n\t"))
	}()
	ops := cancelOps
	if only := os.Getenv("ZOOCURATOR_CANCEL_OPS"); only != "" { // a comma-separated list of op names
		ops = nil
		for _, op := range cancelOps {
			if slices.Contains(strings.Split(only, ","), op.name) {
				ops = append(ops, op)
			}
		}
		require.NotEmpty(t, ops, "ZOOCURATOR_CANCEL_OPS=%q names no call", only)
	}
	for i := 0; (until.IsZero() && i < rounds) || (!until.IsZero() && time.Now().Before(until)); i++ {
		op := ops[rng.IntN(len(ops))]
		moment := moments[rng.IntN(len(moments))]
		k := 1 + rng.IntN(6)
		ok := t.Run(fmt.Sprintf("%03d-%s-%s-k%d", i, op.name, moment, k), func(t *testing.T) {
			leakcheck.Check(t)
			if d := cancelRound(t, op, moment, k); d > worst[op.name+"/"+moment] {
				worst[op.name+"/"+moment] = d
			}
		})
		ran++
		if !ok {
			failed++
			t.Logf("round %d failed: reproduce with ZOOCURATOR_CANCEL_SEED=%d ZOOCURATOR_CANCEL_ROUNDS=%d", i, seed, i+1)
		}
	}
	return ran, failed
}

func newCancelWorld(t *testing.T) *cancelWorld {
	t.Helper()
	w := &cancelWorld{t: t, trig: &trigger{},
		base: fmt.Sprintf("/cancel/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), pathSeq.Add(1))}
	w.proxy = zktest.NewProxy(t, ens.ConnectString())
	w.victim = connect(t, ens.ConnectString(), otherSession, framework.WithDialer(w.proxy.Dialer()),
		framework.WithRequestHook(w.trig.hook))
	w.peer = connect(t, ens.ConnectString(), otherSession)
	return w
}

// cancelRound runs one round and returns how long the call took to return after its
// context was cancelled (0 when it returned first).
func cancelRound(t *testing.T, op cancelOp, moment string, k int) (latency time.Duration) {
	w := newCancelWorld(t)
	bg, bgCancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer bgCancel()
	r, err := op.setup(bg, w)
	require.NoError(t, err, "setup")
	// The peer made the round's nodes, perhaps through another member than the victim's:
	// the victim syncs, so that its session has seen them (a reconnection cannot then
	// take it to a member that has not; reads are not linearizable across sessions).
	require.NoError(t, w.victim.Sync(bg, "/"))
	closed := false
	closeRound := func() {
		if r.close != nil && !closed {
			closed = true
			r.close()
		}
	}
	defer closeRound()

	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	cancelledAt := make(chan time.Time, 1)
	stopAfter := context.AfterFunc(ctx, func() { cancelledAt <- time.Now() })
	defer stopAfter()
	var fired <-chan struct{}
	switch moment {
	case momentBefore:
		cancel()
	case momentSend:
		fired = w.trig.arm(k, cancel)
	case momentStalled:
		fired = w.trig.arm(k, w.proxy.Stall)
	case momentHeldReply:
		fired = w.trig.arm(k, w.proxy.HoldReplies)
	case momentDropped:
		fired = w.trig.arm(k, w.proxy.DropConnections)
	}
	before := w.proxy.Forwarded()
	type result struct {
		undo func(context.Context) error
		err  error
	}
	done := make(chan result, 1)
	go func() {
		undo, err := r.call(ctx)
		done <- result{undo, err}
	}()
	watches := w.victim.Watches()
	var res result
	what := moment
	// A fallback moment, should nothing else cancel the call: it is not an assertion.
	late := time.NewTimer(5 * time.Second)
	defer late.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case res = <-done:
			break wait
		case <-fired:
			fired = nil
			switch moment {
			case momentHeldReply:
				// Cancel once the server has the request (or the connection is gone).
				waitFor(bg, 10*time.Second, func() bool { return w.proxy.Forwarded() > before })
				cancel()
			case momentDropped:
				// Cancel as the call sends its next request on a new connection.
				fired = w.trig.arm(1, cancel)
				moment = momentDropped + "+next"
			default:
				cancel()
			}
		case <-tick.C:
			if op.blocks && ctx.Err() == nil && w.victim.Watches() > watches && !w.trig.disarm() {
				// Waiting for a watch before the k-th request: cancel here.
				what += "/watch-wait"
				cancel()
			}
		case <-late.C:
			if ctx.Err() == nil {
				what += "/late"
				cancel()
			}
		case <-bg.Done():
			t.Fatalf("the %s call did not return after its context was cancelled (%s)", op.name, what)
		}
	}
	returned := time.Now()
	w.trig.disarm()
	// latency: from the cancel to the call's return
	if ctx.Err() != nil {
		select {
		case at := <-cancelledAt:
			latency = max(0, returned.Sub(at))
		case <-bg.Done():
		}
	}
	cancelled := ctx.Err() != nil
	w.proxy.Heal()
	summary := fmt.Sprintf("%s cancelled %s (context ended: %v), returned %v after the cancel: %v", op.name, what, cancelled,
		latency.Round(time.Millisecond), res.err)
	if *soakFor == 0 {
		t.Log(summary)
	} else {
		defer func() { // the soak keeps its output short
			if t.Failed() {
				t.Log(summary)
			}
		}()
	}
	if knownBugs && latency > slowCancel {
		// Known defect: a cancelled lock, semaphore or multi-lock
		// acquire or double barrier Enter whose connection is stalled waits for its
		// cleanup's own timeout (10 s per cleanup step) before it returns.
		t.Errorf("a cancelled %s returned %v after the cancel (%s)", op.name, latency, what)
	}
	if res.err != nil && !errors.Is(res.err, context.Canceled) {
		t.Errorf("a cancelled %s returned %v, not the context's error", op.name, res.err)
	}
	if res.err == nil && res.undo != nil {
		require.NoError(t, res.undo(bg), "undo the call that succeeded")
	}

	// The peer's nodes are untouched.
	for _, s := range r.sentinels {
		st, err := w.peer.Exists(bg, s)
		require.NoError(t, err)
		if st == nil {
			t.Errorf("the peer's node %s was deleted by the victim's cancelled %s", s, op.name)
		}
	}
	require.NoError(t, w.victim.WaitGuaranteedDeletes(bg))
	// The peer may be connected to another member than the victim's deletes went to: a
	// sync brings its member up to date before it looks (reads are not linearizable).
	require.NoError(t, w.peer.Sync(bg, "/"))
	if r.after != nil {
		require.NoError(t, r.after(bg), "after the cancelled %s", op.name)
	}
	if r.unblock != nil {
		require.NoError(t, r.unblock(bg), "unblock")
	}
	// Usable again at once.
	actx, acancel := context.WithTimeout(bg, 30*time.Second)
	undo, err := r.call(actx)
	acancel()
	require.NoError(t, err, "the same %s with a fresh context after the cancelled one", op.name)
	if undo != nil {
		require.NoError(t, undo(bg), "undo the fresh call")
	}
	for _, s := range r.sentinels {
		require.NoError(t, w.peer.Delete(bg, s, framework.Quietly()))
	}
	require.NoError(t, w.victim.WaitGuaranteedDeletes(bg))
	require.NoError(t, w.peer.WaitGuaranteedDeletes(bg))
	if r.check != nil {
		require.NoError(t, r.check(bg))
	}
	closeRound()
	w.checkNothingLeft(bg, op.name)
	return latency
}

// waitFor polls cond until it holds or max passes (a bound on a wait, not an assertion).
func waitFor(ctx context.Context, max time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(max)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// checkNothingLeft asserts that no ephemeral node of either client and no protected
// (_c_) node is left under the base path, deletes the base path, and then asserts that
// no server holds a watch under it.
func (w *cancelWorld) checkNothingLeft(ctx context.Context, op string) {
	t := w.t
	t.Helper()
	sids := map[int64]string{w.victim.SessionID(): "victim", w.peer.SessionID(): "peer"}
	var left []string
	ok := waitFor(ctx, 15*time.Second, func() bool {
		owners, err := zktest.EphemeralOwners(leaderAddr(t))
		if err != nil {
			return false
		}
		left = left[:0]
		for sid, nodes := range owners {
			for _, n := range nodes {
				if strings.HasPrefix(n, w.base+"/") {
					who := sids[sid]
					if who == "" {
						who = fmt.Sprintf("session 0x%x", sid)
					}
					left = append(left, who+" owns "+n)
				}
			}
		}
		return len(left) == 0
	})
	if !ok {
		t.Errorf("ephemeral nodes left under %s after %s: %v", w.base, op, left)
	}
	all, err := tree(ctx, w.peer, w.base)
	require.NoError(t, err)
	for _, n := range all {
		if framework.IsProtectedName(framework.NodeName(n)) {
			t.Errorf("protected node %s left after %s", n, op)
		}
	}
	require.NoError(t, w.peer.Delete(ctx, w.base, framework.WithChildren(), framework.Quietly()))
	ok = waitFor(ctx, 15*time.Second, func() bool {
		for i := 0; i < ens.Size(); i++ {
			out, err := zktest.FourLetterWord(ens.Addr(i), "wchc", 5*time.Second)
			if err != nil || strings.Contains(out, w.base+"/") || strings.Contains(out, w.base+"\n") {
				return false
			}
		}
		return true
	})
	if !ok {
		var dump []string
		for i := 0; i < ens.Size(); i++ {
			out, _ := zktest.FourLetterWord(ens.Addr(i), "wchc", 5*time.Second)
			dump = append(dump, out)
		}
		t.Errorf("watches left under %s after %s (wchc):\n%s", w.base, op, strings.Join(dump, "\n"))
	}
}

// tree lists every node under p (not p itself), sorted.
func tree(ctx context.Context, c *framework.Client, p string) ([]string, error) {
	kids, _, err := c.Children(ctx, p)
	if errors.Is(err, framework.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range kids {
		cp := framework.JoinPath(p, k)
		out = append(out, cp)
		sub, err := tree(ctx, c, cp)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	sort.Strings(out)
	return out, nil
}
