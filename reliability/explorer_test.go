package reliability_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// The explorer applies an adversary's move at every request of every recipe operation.
// For an operation it first runs it once undisturbed and counts the requests the victim
// sends (the operation and its undo: acquire and release, start and close); then, for
// each request index k and each move, it runs the operation again in a fresh world with
// the move applied exactly as the k-th request goes out, and checks the promise:
//
//   - promptness: the operation returns within its context's deadline plus a bound;
//   - ownership: no node another client made (path + czxid) is deleted or replaced by
//     the victim, unless the operation consumes it (a queue item, a barrier node);
//   - honest outcomes, mutual exclusion, conservation, caches equal to the server:
//     each operation's own check (a reported success was applied, a lock reported held
//     is held — a contender on another client cannot take it while the lease is live —,
//     each item delivered once, a cache's data and Stat equal to the server's);
//   - cleanliness: no ephemeral or protected node of the victim left once the operation
//     is undone, no watch left on the servers, no goroutine left (checked per batch).
//
// A run is named "<operation>/<move>/k<k>" and replays from that name alone (the world
// is fresh, the move deterministic): -explore.run='mutex-acquire/remade-same/k2'. The
// fast profile (make test) runs a seeded sample (-explore.sample runs, seed logged;
// ZOOCURATOR_EXPLORE_SEED replays it); make soak runs every combination.

var (
	exploreRun      = flag.String("explore.run", "", "explorer: run only the runs whose name (op/move/kN) matches this regular-expression-free prefix list (comma-separated)")
	exploreSample   = flag.Int("explore.sample", 100, "explorer: the fast profile's share of every (operation, k, move), in runs per 10 000")
	exploreAll      = flag.Bool("explore.all", false, "explorer: run every (operation, k, move) (make soak sets it)")
	exploreParallel = flag.Int("explore.parallel", 1, "explorer: runs at the same time (each in its own world; goroutine leaks are then checked once at the end)")
)

// Timing bounds of a run: generous for a loaded 2-core machine; none is asserted as speed.
const (
	// xDeadline is the operation's context deadline.
	xDeadline = 20 * time.Second
	// xHeldDeadline is the deadline when the move holds a request until the context ends.
	xHeldDeadline = 2 * time.Second
	// xPrompt bounds how long past its deadline an operation may take to return.
	xPrompt = 5 * time.Second
	// xLoss bounds how long a live lease may take to learn that it was lost
	// (the victim's session timeout, its suspension, with slack).
	xLoss = 3 * victimSession
	// xCleanup is the recipes' clean-up timeout, which bounds a Close (it takes no context).
	xCleanup = 10 * time.Second
	// xSlowListener is how long the listener-block move blocks a listener.
	xSlowListener = 10 * time.Second
	// xSlowRetry is the shortest sleep between retries of a victim whose move needs one
	// (longer than xPrompt: an operation that sleeps it out after Close is caught).
	xSlowRetry = 8 * time.Second
)

// xop is one recipe operation the explorer drives.
type xop struct {
	name string
	// setup prepares a run: others' nodes made through r.adv* (so that ownership is
	// checked), the recipe instance on r.victim. Its requests are not counted.
	setup func(ctx context.Context, r *xrun) (*xround, error)
	// listeners: the operation calls r.listenerHook from its listeners (the process moves
	// apply to it).
	listeners bool
	// contends: its rounds have contend (the lagging move applies to it).
	contends bool
	// tool: the operation runs the zkcurator tool; only the process moves apply to it.
	tool bool
}

// xround is one run's operation.
type xround struct {
	// call is the operation, by the victim.
	call func(ctx context.Context) error
	// after checks the operation's promise once call returned (err is its result), before
	// undo: honest outcome, exclusion. It returns the violations found.
	after func(ctx context.Context, err error) []string
	// undo gives back what a successful call got (release, unregister); its requests are
	// part of the operation. nil: nothing.
	undo func(ctx context.Context) error
	// undoCloses says that undo is a Close, which takes no context: it is bounded by the
	// recipes' clean-up timeout instead of the context's deadline.
	undoCloses bool
	// close ends the recipe instance (nil: nothing); also the close-recipe move.
	close func() error
	// final checks what must hold once everything is undone (conservation). nil: none.
	final func(ctx context.Context) []string
	// mayTake reports whether the operation may delete another client's node at path
	// (a consumed item). nil: none.
	mayTake func(path string) bool
	// target names the operation's node when the victim has made none yet (an item to be
	// taken, a barrier node); "" or nil: the newest node the victim made.
	target func() string
	// otherData is other valid content for a node like n (the moves that make the
	// operation's node again with other data); nil: bytes no recipe reads.
	otherData func(n xnode) []byte
	// contend takes what the operation takes (a lock, leadership) on client c, for the
	// lagging move: it holds it until release. nil: the operation takes nothing exclusive.
	contend func(ctx context.Context, c *framework.Client) (release func(), err error)
}

// xmove is one adversary move, applied as the k-th request goes out (on the victim's
// goroutine: the request waits until apply returns).
type xmove struct {
	name string
	// other: a move by another client on the operation's node (needs a target).
	other bool
	// listener: a move of the process on the operation's listeners.
	listener bool
	// lagging: the move cuts the run's member off from its peers (runs alone: it stops
	// every other run's member too when that is the same member).
	lagging bool
	// contender: the move has another client take what the operation takes (needs the
	// operation's contend).
	contender bool
	// slowRetry: the victim's client sleeps xSlowRetry and more between retries.
	slowRetry bool
	// noRetry: the victim's client does not retry a failed request.
	noRetry bool
	// process: a signal to the zkcurator tool (applies to the tool's operations only).
	process bool
	apply   func(r *xrun)
}

// xknown lists violations known and not fixed yet: those of the runs whose name starts
// with run (an operation, or operation/move) and whose text starts with violation ("":
// any). They are logged, not failed, unless ZOOCURATOR_KNOWN_BUGS=1.
var xknown = []struct{ run, violation, why string }{
	{"tree-cache", "events: the change of", "a cache tells the changes one read finds in the read's order, not the server's (zxid) order: the fix lost a node under churn and was left out"},
	{"curator-cache", "events: the change of", "as tree-cache"},
	{"path-children-cache", "events: the change of", "as tree-cache"},
	{"doublebarrier", "cleanliness: the victim's watches left", "a failed Enter leaves its exists watch on ready until ready is made (go-zookeeper cannot send removeWatches; a child watch instead wakes every waiting member at each arrival)"},
	{"doublebarrier-private-peer", "cleanliness: the victim's watches left", "as doublebarrier"},
	{"doublebarrier/reply-lost-remade", "ownership:", "as doublebarrier/remade-same"},
	{"doublebarrier/held-expiry-remade", "ownership:", "as doublebarrier/remade-same: the member, in by the round's ready, takes the node forged at its name in its session's stead for its own"},
	{"doublebarrier/held-expiry-remade-other", "ownership:", "as doublebarrier/held-expiry-remade"},
	{"doublebarrier-private-peer/held-expiry-remade", "ownership:", "as doublebarrier/held-expiry-remade"},
	{"doublebarrier-private-peer/held-expiry-remade-other", "ownership:", "as doublebarrier/held-expiry-remade"},
	{"doublebarrier-private-peer/reply-lost-remade", "ownership:", "as doublebarrier/remade-same"},
	{"doublebarrier/unreadable", "", "another client forges the member's own node (its UUID name) unreadable: Leave's transaction fails on it and its clean-up deletes it by name"},
	{"doublebarrier/remade-same", "ownership:", "another client forges the member's own node (its UUID name): Leave deletes it by name"},
	{"doublebarrier/remade-other", "ownership:", "as doublebarrier/remade-same"},
	{"doublebarrier/unreadable-remade", "ownership:", "as doublebarrier/remade-same"},
	{"doublebarrier/parent-remade-with-node", "ownership:", "as doublebarrier/remade-same: the node made again in the parent made again has the member's name"},
	{"doublebarrier-private-peer/unreadable-remade", "ownership:", "as doublebarrier/remade-same"},
	{"doublebarrier-private-peer/parent-remade-with-node", "ownership:", "as doublebarrier/parent-remade-with-node"},
	{"doublebarrier-private-peer/unreadable", "", "as doublebarrier/unreadable"},
	{"doublebarrier-private-peer/remade-same", "ownership:", "as doublebarrier/remade-same"},
	{"doublebarrier-private-peer/remade-other", "ownership:", "as doublebarrier/remade-same"},
	{"discovery-register/remade-same", "honest:", "a registration takes the node another client made again at its instance's path (same id) for its own"},
	{"discovery-register/remade-other", "honest:", "as discovery-register/remade-same"},
	{"multilock-acquire/remade-other", "honest:", "a part's node replaced by another client's in one transaction between its grant and Acquire's return: the part's lease is live until its watch fires, so Acquire returns success without a node of its session"},
	{"discovery-register/unreadable", "honest:", "as discovery-register/remade-same"},
	{"discovery-register/held-expiry-remade", "honest:", "as discovery-register/remade-same"},
	{"discovery-register/parent-remade-with-node", "honest:", "as discovery-register/remade-same"},
	{"discovery-register/unreadable-remade", "honest:", "as discovery-register/remade-same"},
	{"discovery-register/held-expiry-remade-other", "honest:", "as discovery-register/remade-same"},
	{"discovery-register/failed-remade", "honest:", "as discovery-register/remade-same"},
	{"discovery-register/reply-lost-remade", "", "as discovery-register/remade-same; the node made again carries the registration's owner token (the adversary copies its ACL), the registration's only proof, so it is taken, written and deleted as the registration's own"},
}

// knownFor returns why the violation v of run name is known, or "".
func knownFor(name, v string) string {
	for _, k := range xknown {
		if (name == k.run || strings.HasPrefix(name, k.run+"/")) && strings.HasPrefix(v, k.violation) {
			return k.why
		}
	}
	return ""
}

// xops are the operations explored, by family.
var xops = slices.Concat(xlockOps, xcacheOps, xqueueOps, xdiscoveryOps, xbarrierOps, xvalueOps, xtoolOps)

var xmoves = slices.Concat([]xmove{
	// on the wire
	{name: "reply-lost", apply: func(r *xrun) { r.replyLost(nil) }},
	// the reply lost, and the operation's node deleted and made again (same data) by
	// another client before the victim hears anything more
	{name: "reply-lost-remade", other: true, apply: func(r *xrun) {
		r.replyLost(func() { r.advDeleteTarget(true, false) })
	}},
	{name: "held-ctx", apply: func(r *xrun) {
		// Held until the operation's deadline; healed then also when the request is one of
		// the recipe's own, sent after the call returned.
		r.w.proxy.StallFor(xHeldDeadline + 500*time.Millisecond)
		r.healAfterCall.Store(true)
	}},
	{name: "held-expiry", apply: func(r *xrun) { r.holdUntilExpired(false, false, false) }},
	// held until the session expires, and meanwhile the operation's node is deleted and
	// made again (same data) by another client
	{name: "held-expiry-remade", other: true, apply: func(r *xrun) { r.holdUntilExpired(true, false, false) }},
	// held until the session expires, and meanwhile the operation's node is deleted and
	// made again with other data by another client
	{name: "held-expiry-remade-other", other: true, apply: func(r *xrun) { r.holdUntilExpired(true, true, false) }},
	// held until the session expires, and meanwhile another client takes what the
	// operation takes (a lock, leadership) and holds it until the operation returned
	{name: "held-expiry-taken", contender: true, apply: func(r *xrun) { r.holdUntilExpired(false, false, true) }},
	// held until the session expires; the operation's listeners panic at every call from
	// the move on (the loss, the reconnection, what follows)
	{name: "held-expiry-listener-panic", listener: true, apply: func(r *xrun) {
		r.armListener("panic-always")
		r.holdUntilExpired(false, false, false)
	}},
	// the k-th request fails on a dropped connection (the victim's client does not retry
	// for this move), and once the operation returned another client deletes its node and
	// makes it again (same data): what the recipe learnt of its node when the request
	// failed must not make the other's node its own
	{name: "failed-remade", other: true, noRetry: true, apply: func(r *xrun) {
		r.w.proxy.DropConnections()
		r.background(func() {
			waitFor(r.bg, 30*time.Second, func() bool { return isClosedCh(r.callDone) })
			time.Sleep(200 * time.Millisecond) // the recipe settles on what it learnt
			r.advDeleteTarget(true, false)
		})
	}},
	// held while another client changes the operation's node and changes it back: the
	// victim hears of it only after both
	{name: "held-aba", other: true, apply: func(r *xrun) {
		r.w.proxy.Stall()
		r.background(func() {
			r.advABA()
			r.w.proxy.Heal()
		})
	}},
	// the connection dropped, and the client closed while the operation sleeps between
	// retries (the victim's retry policy sleeps xSlowRetry and more for this move)
	{name: "dropped-close", slowRetry: true, apply: func(r *xrun) {
		r.w.proxy.Refuse()
		r.w.proxy.DropConnections()
		r.background(func() {
			time.Sleep(200 * time.Millisecond)
			r.closeClient()
		})
	}},
	{name: "dropped", apply: func(r *xrun) { r.w.proxy.DropConnections() }},
	{name: "lagging", lagging: true, apply: func(r *xrun) { r.lag() }},
	// by another client, on the operation's node
	{name: "deleted", other: true, apply: func(r *xrun) { r.advDeleteTarget(false, false) }},
	{name: "remade-same", other: true, apply: func(r *xrun) { r.advDeleteTarget(true, false) }},
	{name: "remade-other", other: true, apply: func(r *xrun) { r.advDeleteTarget(true, true) }},
	{name: "unreadable", other: true, apply: func(r *xrun) { r.advReplaceUnreadable() }},
	// replaced by a node the victim may not read, which is then replaced by a readable
	// one again (same data)
	{name: "unreadable-remade", other: true, apply: func(r *xrun) {
		n, ok := r.target(r.bg)
		if !ok {
			r.noTarget.Store(true)
			return
		}
		r.advReplace(n, n.data, advACL)
		r.background(func() {
			time.Sleep(time.Second) // the victim hears of the unreadable node meanwhile
			r.advReplace(n, n.data, nil)
		})
	}},
	{name: "parent-deleted", other: true, apply: func(r *xrun) { r.advDeleteParent(false, false) }},
	{name: "parent-remade", other: true, apply: func(r *xrun) { r.advDeleteParent(true, false) }},
	{name: "parent-remade-with-node", other: true, apply: func(r *xrun) { r.advDeleteParent(true, true) }},
	{name: "competitor-ahead", other: true, apply: func(r *xrun) { r.advCompetitorAhead() }},
	{name: "aba", other: true, apply: func(r *xrun) { r.advABA() }},
	// by the caller
	{name: "cancel", apply: func(r *xrun) { r.cancel() }},
	{name: "close-recipe", apply: func(r *xrun) {
		if r.round.close != nil {
			r.closedEarly.Store(true)
			go func() { _ = r.round.close() }() // Close may wait for the operation: not on its goroutine
		}
	}},
	{name: "close-client", apply: func(r *xrun) {
		r.closing.Add(1)
		go func() { defer r.closing.Done(); r.closeClient() }()
	}},
	// by the process: the next listener call after the k-th request misbehaves
	{name: "listener-panic", listener: true, apply: func(r *xrun) { r.armListener("panic") }},
	{name: "listener-block", listener: true, apply: func(r *xrun) { r.armListener("block") }},
	{name: "listener-close", listener: true, apply: func(r *xrun) { r.armListener("close") }},
}, xtoolMoves)

// xworld is a run's clients: the victim behind a proxy to one member, the adversary
// connected directly to the same member (so that the victim's next request sees what
// the adversary did), with digest credentials the victim lacks.
type xworld struct {
	proxy     *zktest.Proxy
	victim    *framework.Client
	adv       *framework.Client
	member    int
	base      string
	sessions  map[int64]bool // the victim's sessions seen
	sessionMu sync.Mutex
}

// advACL is the ACL of a node the victim may not read.
var advACL = zk.DigestACL(zk.PermAll, "adversary", "secret")

// xrun is one run of an operation under a move at k.
type xrun struct {
	t     *testing.T
	name  string
	w     *xworld
	op    *xop
	move  xmove
	k     int
	round *xround

	callDone chan struct{} // closed when the operation's call returned

	bg     context.Context // the run's own bound
	ctx    context.Context // the operation's
	cancel context.CancelFunc

	advMu      sync.Mutex // held while the adversary makes a node and records it
	mu         sync.Mutex
	n          int  // requests counted so far
	armed      bool // the move waits for request k
	fired      bool
	noTarget   atomic.Bool      // an other-client move found no node to act on
	startZxid  int64            // the zxid before the run: nodes made later are the run's
	callZxid   int64            // the newest node of the set-up: changes later are the run's
	advNodes   map[string]int64 // nodes the adversary made (path -> czxid) and did not delete itself
	containers map[string]bool  // of them, containers (the server reaps them)
	victimOps  []xreq
	movedAt    time.Time // when the move was applied
	closedAt   time.Time // when the move closed the victim's client
	advLog     []xchange // what the adversary made and deleted, in order

	counting bool   // the undisturbed run: record at each request whether a target exists
	targetAt []bool // at request k+1: whether the operation had a node to act on

	lagged           atomic.Bool // the run's member is cut off from its peers
	contended        atomic.Bool // a contender got in (lagging, held-expiry-taken)
	contendedWhy     string      // when it got in
	contendedAt      time.Time
	contender        *framework.Client // its client
	releaseContender func()            // gives back what it got

	tool          *xtoolRun // the zkcurator run of a tool operation
	healAfterCall atomic.Bool
	closedEarly   atomic.Bool
	clientClosed  atomic.Bool
	closing       sync.WaitGroup // the close-client move's Close, until it returned
	listenerMode  string
	unblock       chan struct{}
	bgDone        []chan struct{} // closed as each background step ends
	violations    []string
}

func (r *xrun) violate(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// background runs fn beside the operation; waitBackground waits for every such fn,
// including those started meanwhile.
func (r *xrun) background(fn func()) {
	done := make(chan struct{})
	r.mu.Lock()
	r.bgDone = append(r.bgDone, done)
	r.mu.Unlock()
	go func() { defer close(done); fn() }()
}

func (r *xrun) waitBackground() {
	for i := 0; ; i++ {
		r.mu.Lock()
		if i == len(r.bgDone) {
			r.mu.Unlock()
			return
		}
		done := r.bgDone[i]
		r.mu.Unlock()
		<-done
	}
}

// hook is the victim's request hook: the k-th request fires the move.
func (r *xrun) hook(string) {
	r.mu.Lock()
	r.n++
	fire := r.armed && r.n == r.k
	if fire {
		r.armed, r.fired = false, true
	}
	counting := r.counting
	r.mu.Unlock()
	if fire {
		r.move.apply(r)
		r.mu.Lock()
		r.movedAt = time.Now()
		r.mu.Unlock()
	}
	if counting {
		_, ok := r.target(r.bg)
		r.mu.Lock()
		r.targetAt = append(r.targetAt, ok)
		r.mu.Unlock()
	}
}

// xreq is one of the victim's requests, as observed when it ended.
type xreq struct {
	framework.RequestInfo
	End time.Time
}

func (r *xrun) observe(info framework.RequestInfo) {
	r.mu.Lock()
	r.victimOps = append(r.victimOps, xreq{info, time.Now()})
	r.mu.Unlock()
	r.w.sessionMu.Lock()
	r.w.sessions[r.w.victim.SessionID()] = true
	r.w.sessionMu.Unlock()
}

func (r *xrun) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// advCreate makes a node as another client and records it as not the victim's.
func (r *xrun) advCreate(ctx context.Context, path string, data []byte, opts ...framework.CreateOption) (string, error) {
	r.advMu.Lock() // a move looking for the victim's node waits until this one is recorded
	defer r.advMu.Unlock()
	// Parents the create makes (WithParents) are the adversary's too.
	var missing []string
	for a := framework.ParentPath(path); strings.HasPrefix(a, r.w.base+"/"); a = framework.ParentPath(a) {
		if st, err := r.w.adv.Exists(ctx, a); err == nil && st == nil {
			missing = append(missing, a)
		}
	}
	p, st, err := r.w.adv.CreateStat(ctx, path, data, opts...)
	if err != nil {
		return "", err
	}
	for _, a := range missing {
		if ast, err := r.w.adv.Exists(ctx, a); err == nil && ast != nil && ast.Czxid <= st.Czxid {
			r.recordAdv(a, ast)
		}
	}
	r.recordAdv(p, st)
	r.logAdv(true, p, data)
	return p, nil
}

// recordAdv records the node p as the adversary's (a container: one the server may reap).
func (r *xrun) recordAdv(p string, st *framework.Stat) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advNodes[p] = st.Czxid
	r.containers[p] = st.EphemeralOwner == math.MinInt64
}

// forgetAdv forgets the adversary's nodes at and under p (it deleted them).
func (r *xrun) forgetAdv(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for q := range r.advNodes {
		if q == p || strings.HasPrefix(q, p+"/") {
			delete(r.advNodes, q)
		}
	}
}

// xchange is one node the adversary made (made) or deleted (!made), with its data.
type xchange struct {
	made bool
	path string
	data []byte
}

func (r *xrun) logAdv(made bool, path string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advLog = append(r.advLog, xchange{made, path, data})
}

// advChanges returns the adversary's log.
func (r *xrun) advChanges() []xchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.advLog)
}

// logDeletedTree logs the deletion of n and every node under it (read before).
func (r *xrun) logDeletedTree(nodes []xnode, root string) {
	for _, n := range nodes {
		if n.path == root || strings.HasPrefix(n.path, root+"/") {
			r.logAdv(false, n.path, n.data)
		}
	}
}

// xnode is a node of the run's tree as the adversary reads it.
type xnode struct {
	path string
	data []byte
	stat *framework.Stat
}

// snapshot reads the tree under the base (not the base itself), parents before children.
func (r *xrun) snapshot(ctx context.Context) []xnode {
	var out []xnode
	var walk func(p string)
	walk = func(p string) {
		kids, _, err := r.w.adv.Children(ctx, p)
		if err != nil {
			return
		}
		sort.Strings(kids)
		for _, k := range kids {
			cp := framework.JoinPath(p, k)
			b, st, err := r.w.adv.GetData(ctx, cp)
			if errors.Is(err, framework.ErrNoAuth) {
				st, err = r.w.adv.Exists(ctx, cp)
			}
			if err != nil || st == nil {
				continue
			}
			out = append(out, xnode{cp, b, st})
			walk(cp)
		}
	}
	walk(r.w.base)
	return out
}

// target returns the operation's node: the newest node the victim made in this run, or
// the operation's own target.
func (r *xrun) target(ctx context.Context) (xnode, bool) {
	r.advMu.Lock()
	defer r.advMu.Unlock()
	var best xnode
	found := false
	r.mu.Lock()
	adv := copyNodes(r.advNodes)
	r.mu.Unlock()
	for _, n := range r.snapshot(ctx) {
		if n.stat.Czxid <= r.startZxid || adv[n.path] == n.stat.Czxid {
			continue
		}
		if !found || n.stat.Czxid > best.stat.Czxid {
			best, found = n, true
		}
	}
	if !found && r.round.target != nil {
		if p := r.round.target(); p != "" {
			b, st, err := r.w.adv.GetData(ctx, p)
			if err == nil {
				best, found = xnode{p, b, st}, true
			}
		}
	}
	if found && !r.counting {
		r.t.Logf("the move acts on %s (czxid 0x%x)", best.path, best.stat.Czxid)
	}
	return best, found
}

func copyNodes(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// modeOf is the create mode of a node like n: ephemeral (a session's: positive owner),
// else persistent (containers and TTL nodes are made again as persistent nodes).
func modeOf(st *framework.Stat) framework.CreateMode {
	if st.EphemeralOwner > 0 {
		return framework.Ephemeral
	}
	return framework.Persistent
}

// holdUntilExpired holds the victim's requests until its session has expired on the
// servers (and, when remake, has the adversary delete and make again the operation's node
// meanwhile), then lets them through.
func (r *xrun) holdUntilExpired(remake, other, take bool) {
	var n xnode
	if remake {
		var ok bool
		if n, ok = r.target(r.bg); !ok {
			r.noTarget.Store(true)
			return
		}
	}
	r.w.proxy.Stall()
	sid := r.w.victim.SessionID()
	r.background(func() {
		waitFor(r.bg, 60*time.Second, func() bool {
			ids, err := zktest.TrackedSessions(leaderAddr(r.t))
			return err == nil && !slices.Contains(ids, sid)
		})
		if remake {
			// The node may have gone with the session (ephemeral): make it again.
			data := r.remadeData(n, other)
			if st, err := r.w.adv.Exists(r.bg, n.path); err == nil && st == nil {
				if _, err := r.advCreate(r.bg, n.path, data, framework.WithMode(modeOf(n.stat))); err != nil {
					r.t.Logf("adversary: make %s again: %v", n.path, err)
				}
			} else {
				r.advReplace(n, data, nil)
			}
		}
		if take {
			r.takeAsContender(r.w.member, "while the victim's session was gone")
		}
		r.w.proxy.Heal()
	})
}

// replyLost holds the replies from the k-th request on; once the request reached the
// server (which applies it meanwhile: either way is a legal outcome), meanwhile runs (nil:
// nothing), then the connection drops and the proxy heals.
func (r *xrun) replyLost(meanwhile func()) {
	before := r.w.proxy.Forwarded()
	r.w.proxy.HoldReplies()
	r.background(func() {
		waitFor(r.bg, 10*time.Second, func() bool { return r.w.proxy.Forwarded() > before })
		time.Sleep(100 * time.Millisecond)
		if meanwhile != nil {
			meanwhile()
		}
		r.w.proxy.DropConnections()
		r.w.proxy.Heal()
	})
}

// takeAsContender has a contender on member m take what the operation takes; it holds it
// until the operation returned. why says when, for the exclusion check.
func (r *xrun) takeAsContender(m int, why string) {
	c, err := framework.Connect(r.bg, ens.Addr(m), framework.WithSessionTimeout(otherSession), framework.WithRetryPolicy(fastPolicy(r.t)))
	if err != nil {
		r.t.Logf("contender: connect to member %d: %v", m, err)
		return
	}
	r.mu.Lock()
	r.contender = c
	r.mu.Unlock()
	cctx, cancel := context.WithTimeout(r.bg, 10*time.Second)
	defer cancel()
	release, err := r.round.contend(cctx, c)
	if err != nil {
		r.t.Logf("contender: on member %d, did not get in: %v", m, err)
		return
	}
	r.mu.Lock()
	r.releaseContender, r.contendedWhy, r.contendedAt = release, why, time.Now()
	r.mu.Unlock()
	r.contended.Store(true)
}

// closeClient closes the victim's client and records when.
func (r *xrun) closeClient() {
	r.mu.Lock()
	r.closedAt = time.Now()
	r.mu.Unlock()
	r.clientClosed.Store(true)
	_ = r.w.victim.Close()
}

// advDeleteTarget deletes the operation's node and, when remake, makes one again under
// the same name (with other data, or the same) in one transaction.
func (r *xrun) advDeleteTarget(remake, other bool) {
	n, ok := r.target(r.bg)
	if !ok {
		r.noTarget.Store(true)
		return
	}
	if !remake {
		before := r.snapshot(r.bg)
		if err := r.w.adv.Delete(r.bg, n.path, framework.WithChildren(), framework.Quietly()); err != nil {
			r.t.Logf("adversary: delete %s: %v", n.path, err)
			return
		}
		r.logDeletedTree(before, n.path)
		r.forgetAdv(n.path)
		return
	}
	r.advReplace(n, r.remadeData(n, other), nil)
}

// xOtherData is the other data of a node made again, when the operation has none of
// its own (xround.otherData): bytes no recipe reads.
var xOtherData = []byte("other data")

// remadeData is the data a node like n is made again with: n's own, or other data.
func (r *xrun) remadeData(n xnode, other bool) []byte {
	switch {
	case !other:
		return n.data
	case r.round.otherData != nil:
		return r.round.otherData(n)
	}
	return xOtherData
}

// advReplace deletes n and creates a node of the same mode at its path in one multi.
func (r *xrun) advReplace(n xnode, data []byte, acl []zk.ACL) {
	if acl == nil {
		acl = zk.WorldACL(zk.PermAll)
	}
	before := r.snapshot(r.bg)
	kids, _, _ := r.w.adv.Children(r.bg, n.path)
	for _, k := range kids { // a node with children goes with them
		_ = r.w.adv.Delete(r.bg, framework.JoinPath(n.path, k), framework.WithChildren(), framework.Quietly())
	}
	if _, err := r.w.adv.Transaction(r.bg, framework.DeleteOp(n.path, -1),
		framework.CreateOp(n.path, data, modeOf(n.stat), acl)); err != nil {
		r.t.Logf("adversary: replace %s: %v", n.path, err)
		return
	}
	r.logDeletedTree(before, n.path)
	r.forgetAdv(n.path)
	r.logAdv(true, n.path, data)
	if st, err := r.w.adv.Exists(r.bg, n.path); err == nil && st != nil {
		r.recordAdv(n.path, st)
	}
}

func (r *xrun) advReplaceUnreadable() {
	n, ok := r.target(r.bg)
	if !ok {
		r.noTarget.Store(true)
		return
	}
	r.advReplace(n, n.data, advACL)
}

// advDeleteParent deletes the parent of the operation's node with everything under it
// and, when remake, makes the parent again (empty, or with a node of the operation's
// node's name and data when withNode).
func (r *xrun) advDeleteParent(remake, withNode bool) {
	n, ok := r.target(r.bg)
	if !ok {
		r.noTarget.Store(true)
		return
	}
	parent := framework.ParentPath(n.path)
	if parent == r.w.base || !strings.HasPrefix(parent, r.w.base+"/") {
		r.noTarget.Store(true)
		return
	}
	before := r.snapshot(r.bg)
	if remake && withNode && r.advReplaceParent(before, parent, n) {
		return
	}
	if err := r.w.adv.Delete(r.bg, parent, framework.WithChildren(), framework.Quietly()); err != nil {
		r.t.Logf("adversary: delete %s: %v", parent, err)
	}
	r.logDeletedTree(before, parent)
	r.forgetAdv(parent)
	if remake {
		if _, err := r.advCreate(r.bg, parent, nil); err != nil {
			r.t.Logf("adversary: make %s again: %v", parent, err)
		}
	}
	if remake && withNode {
		if _, err := r.advCreate(r.bg, n.path, n.data, framework.WithMode(modeOf(n.stat))); err != nil {
			r.t.Logf("adversary: make %s again: %v", n.path, err)
		}
	}
}

// advReplaceParent deletes parent with everything under it (as before shows it) and makes
// it again with a node like n, in one transaction: a reader never sees the parent gone.
// It reports whether it did (the tree changed meanwhile: it did nothing).
func (r *xrun) advReplaceParent(before []xnode, parent string, n xnode) bool {
	var ops []framework.Op
	for i := len(before) - 1; i >= 0; i-- { // children before their parents
		if p := before[i].path; strings.HasPrefix(p, parent+"/") {
			ops = append(ops, framework.DeleteOp(p, -1))
		}
	}
	ops = append(ops, framework.DeleteOp(parent, -1),
		framework.CreateOp(parent, nil, framework.Persistent, nil),
		framework.CreateOp(n.path, n.data, modeOf(n.stat), nil))
	if _, err := r.w.adv.Transaction(r.bg, ops...); err != nil {
		r.t.Logf("adversary: replace %s with %s in it: %v", parent, n.path, err)
		return false
	}
	r.logDeletedTree(before, parent)
	r.forgetAdv(parent)
	for _, p := range []string{parent, n.path} {
		if st, err := r.w.adv.Exists(r.bg, p); err == nil && st != nil {
			r.recordAdv(p, st)
		}
	}
	r.logAdv(true, parent, nil)
	r.logAdv(true, n.path, n.data)
	return true
}

// advCompetitorAhead adds a sibling that sorts before the operation's node: same name
// with a lower sequence number when it has one, else the name with a leading "0".
func (r *xrun) advCompetitorAhead() {
	n, ok := r.target(r.bg)
	if !ok {
		r.noTarget.Store(true)
		return
	}
	name := framework.NodeName(n.path)
	ahead := "0" + name
	if i := len(name) - 10; i > 0 && allDigits(name[i:]) {
		ahead = aheadName(name[:i], name[i:])
	}
	p := framework.JoinPath(framework.ParentPath(n.path), ahead)
	if _, err := r.advCreate(r.bg, p, n.data, framework.WithMode(modeOf(n.stat))); err != nil {
		r.t.Logf("adversary: competitor %s: %v", p, err)
		return
	}
	// The competitor leaves after a while, as a holder that releases.
	r.background(func() {
		select {
		case <-time.After(time.Second):
		case <-r.bg.Done():
		}
		r.forgetAdv(p)
		if r.w.adv.Delete(r.bg, p) == nil {
			r.logAdv(false, p, n.data)
		}
	})
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// aheadName is prefix with a sequence one below seq (0 stays 0: the name then sorts
// equal, which a recipe breaks by the whole name). A protected prefix gets another
// client's UUID.
func aheadName(prefix, seq string) string {
	var v int64
	fmt.Sscan(seq, &v)
	if v > 0 {
		v--
	}
	if framework.IsProtectedName(prefix) && len(prefix) > 40 {
		prefix = "_c_00000000-0000-4000-8000-000000000000-" + prefix[40:]
	}
	return fmt.Sprintf("%s%010d", prefix, v)
}

// advABA changes the node's data and changes it back.
func (r *xrun) advABA() {
	n, ok := r.target(r.bg)
	if !ok {
		r.noTarget.Store(true)
		return
	}
	if _, err := r.w.adv.SetData(r.bg, n.path, append(slices.Clone(n.data), 'x'), -1); err != nil {
		r.t.Logf("adversary: aba %s: %v", n.path, err)
		return
	}
	_, _ = r.w.adv.SetData(r.bg, n.path, n.data, -1)
}

// armListener makes the operation's next listener call misbehave.
func (r *xrun) armListener(mode string) {
	r.mu.Lock()
	r.listenerMode = mode
	r.mu.Unlock()
}

// listenerHook is called first in every listener of an operation that has them.
func (r *xrun) listenerHook() {
	r.mu.Lock()
	mode := r.listenerMode
	r.listenerMode = ""
	r.mu.Unlock()
	switch mode {
	case "panic":
		panic("explorer: a listener panics")
	case "panic-always":
		r.mu.Lock()
		r.listenerMode = mode
		r.mu.Unlock()
		panic("explorer: a listener panics")
	case "block": // a slow listener: longer than a loss takes to be noticed
		select {
		case <-time.After(xSlowListener):
		case <-r.unblock:
		case <-r.bg.Done():
		}
	case "close":
		if r.round.close != nil {
			r.closedEarly.Store(true)
			_ = r.round.close()
		}
	}
}

func (op *xop) applicable(m xmove) bool {
	return m.process == op.tool && (!m.listener || op.listeners) && (!m.lagging && !m.contender || op.contends)
}

// lag cuts the victim's member (a follower) off from its peers; once the victim's session
// has expired on the others, a contender on another member takes what the operation takes;
// then the victim's request goes on, to a member that answers from its old state until it
// notices the cut. The cut is healed once the operation returned.
func (r *xrun) lag() {
	leader, err := ens.Leader()
	if err != nil || leader == r.w.member {
		r.noTarget.Store(true) // the move needs a follower
		return
	}
	require.NoError(r.t, ens.Isolate(r.w.member))
	r.lagged.Store(true)
	sid := r.w.victim.SessionID()
	leaderAddr := ens.Addr(leader)
	waitFor(r.bg, 20*time.Second, func() bool {
		ids, err := zktest.TrackedSessions(leaderAddr)
		return err == nil && !slices.Contains(ids, sid)
	})
	r.takeAsContender((r.w.member+1)%ens.Size(), "on another member since the victim's session expired there, while the victim's member was cut off from its peers")
}

// exploreRuns lists every run name of op for k = 1..len(targetAt), leaving out the
// moves on the operation's node at requests where it had none in the undisturbed run.
func exploreRuns(op *xop, targetAt []bool) []string {
	var out []string
	for k := 1; k <= len(targetAt); k++ {
		for _, m := range xmoves {
			if op.applicable(m) && (!m.other || targetAt[k-1]) {
				out = append(out, fmt.Sprintf("%s/%s/k%d", op.name, m.name, k))
			}
		}
	}
	return out
}

func TestExplorer(t *testing.T) {
	healthy(t)
	// The fast profile's sample is the same from run to run (CI must not depend on the
	// draw); ZOOCURATOR_EXPLORE_SEED draws another.
	seed := envInt(t, "ZOOCURATOR_EXPLORE_SEED", 1)
	all := *exploreAll || *soakFor > 0
	var only []string
	if *exploreRun != "" {
		only = strings.Split(*exploreRun, ",")
	}
	// Count each operation's requests in an undisturbed run.
	var names []string
	counts := map[string]int{}
	for i := range xops {
		op := &xops[i]
		if only != nil && !slices.ContainsFunc(only, func(s string) bool { return strings.HasPrefix(s, op.name+"/") || s == op.name }) {
			continue
		}
		var targetAt []bool
		t.Run("clean/"+op.name, func(t *testing.T) {
			targetAt = runClean(t, op)
		})
		counts[op.name] = len(targetAt)
		names = append(names, exploreRuns(op, targetAt)...)
	}
	if only != nil {
		names = slices.DeleteFunc(names, func(s string) bool {
			return !slices.ContainsFunc(only, func(o string) bool { return strings.HasPrefix(s, o) })
		})
	} else if !all {
		// The fast profile: each run is in the sample or not by a hash of the seed and its
		// name alone, so that the sample stays the same when another operation's request
		// count changes. It leaves out the lagging move (a member cut off and healed: 10 s
		// and more a run); make soak runs it.
		names = slices.DeleteFunc(names, func(s string) bool {
			h := fnv.New64a()
			fmt.Fprintf(h, "%d/%s", seed, s)
			return strings.Contains(s, "/lagging/") || h.Sum64()%10000 >= uint64(*exploreSample)
		})
	}
	t.Logf("explorer: %d operations, %d runs (seed %d; ZOOCURATOR_EXPLORE_SEED=%d replays the sample); requests per operation: %v",
		len(counts), len(names), seed, seed, counts)
	var until time.Time
	if *soakFor > 0 {
		until = time.Now().Add(*soakFor)
	}
	workers := max(1, *exploreParallel)
	if workers > 1 {
		leakcheck.Check(t) // once for all runs: a run's own check would see the others'
	}
	var (
		mu              sync.Mutex
		ran, failed, na int
		failures        []string
		next            = make(chan string)
		wg              sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range next {
				op, move, k := parseRun(t, name)
				var applied bool
				ok := t.Run(name, func(t *testing.T) {
					applied = runExplore(t, op, move, k, workers == 1)
				})
				mu.Lock()
				ran++
				if !applied {
					na++
				}
				if !ok {
					failed++
					failures = append(failures, name)
				}
				mu.Unlock()
			}
		}()
	}
	var lagging []string
	for _, name := range names {
		if !until.IsZero() && time.Now().After(until) {
			break
		}
		if strings.Contains(name, "/lagging/") {
			lagging = append(lagging, name)
			continue
		}
		next <- name
	}
	close(next)
	wg.Wait()
	for _, name := range lagging { // one at a time: the move cuts a member off
		if !until.IsZero() && time.Now().After(until) {
			break
		}
		op, move, k := parseRun(t, name)
		var applied bool
		ok := t.Run(name, func(t *testing.T) { applied = runExplore(t, op, move, k, workers == 1) })
		ran++
		if !applied {
			na++
		}
		if !ok {
			failed++
			failures = append(failures, name)
		}
	}
	sort.Strings(failures)
	summary := fmt.Sprintf("explorer: %d of %d runs made (%d where the move found nothing to act on), %d failed: %s",
		ran, len(names), na, failed, strings.Join(failures, " "))
	t.Log(summary)
	if *soakFor > 0 {
		fmt.Fprintf(os.Stdout, "soak: %s\n", summary)
	}
}

func parseRun(t *testing.T, name string) (*xop, xmove, int) {
	parts := strings.Split(name, "/")
	require.Len(t, parts, 3, "run %q", name)
	var k int
	_, err := fmt.Sscanf(parts[2], "k%d", &k)
	require.NoError(t, err, "run %q", name)
	i := slices.IndexFunc(xops, func(o xop) bool { return o.name == parts[0] })
	require.GreaterOrEqual(t, i, 0, "no operation %q", parts[0])
	j := slices.IndexFunc(xmoves, func(m xmove) bool { return m.name == parts[1] })
	require.GreaterOrEqual(t, j, 0, "no move %q", parts[1])
	return &xops[i], xmoves[j], k
}

// runClean runs op undisturbed, checks it, and returns, for each request it sent,
// whether the operation had a node of its own (or a target) as it went out.
func runClean(t *testing.T, op *xop) []bool {
	leakcheck.Check(t)
	r := newRun(t, op, xmove{name: "none", apply: func(*xrun) {}}, 0)
	r.execute()
	for _, v := range r.violations {
		t.Error(v)
	}
	var seq []string
	for _, o := range r.victimOps {
		seq = append(seq, o.Op+" "+strings.TrimPrefix(o.Path, r.w.base))
	}
	t.Logf("%d requests: %s", r.requests(), strings.Join(seq, ", "))
	return r.targetAt
}

// runExplore runs op with move at k; it reports whether the move was applied. leaks:
// check this run's goroutines (only when runs do not overlap).
func runExplore(t *testing.T, op *xop, move xmove, k int, leaks bool) bool {
	if move.lagging {
		healthy(t) // the last cut's member may still be rejoining
	}
	if leaks {
		leakcheck.Check(t)
	}
	r := newRun(t, op, move, k)
	r.execute()
	if !r.fired || r.noTarget.Load() {
		t.Logf("the move was not applied (requests %d, fired %v)", r.requests(), r.fired)
		return false
	}
	for _, v := range r.violations {
		if why := knownFor(r.name, v); why != "" && !knownBugs {
			t.Logf("known, not failed (ZOOCURATOR_KNOWN_BUGS=1 fails it: %s): %s", why, v)
			continue
		}
		t.Errorf("%s", v)
	}
	return true
}

// memberFor picks the member a run's clients use, from its name (the same for a replay).
func memberFor(t *testing.T, name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32() % uint32(ens.Size()))
}

func newRun(t *testing.T, op *xop, move xmove, k int) *xrun {
	t.Helper()
	name := fmt.Sprintf("%s/%s/k%d", op.name, move.name, k)
	m := memberFor(t, name)
	w := &xworld{member: m, sessions: map[int64]bool{},
		base: fmt.Sprintf("/explore/%s-%d", strings.ReplaceAll(name, "/", "_"), pathSeq.Add(1))}
	r := &xrun{t: t, name: name, w: w, op: op, move: move, k: k,
		advNodes: map[string]int64{}, containers: map[string]bool{}, unblock: make(chan struct{}), callDone: make(chan struct{})}
	w.proxy = zktest.NewProxy(t, ens.Addr(m))
	opts := []framework.Option{framework.WithDialer(w.proxy.Dialer()),
		framework.WithRequestHook(r.hook), framework.WithRequestObserver(r.observe)}
	switch {
	case move.slowRetry:
		p, err := retry.NewBoundedExponentialBackoff(xSlowRetry, 2*xSlowRetry, 29)
		require.NoError(t, err)
		opts = append(opts, framework.WithRetryPolicy(p))
	case move.noRetry:
		p, err := retry.NewNTimes(0, 0)
		require.NoError(t, err)
		opts = append(opts, framework.WithRetryPolicy(p))
	}
	w.victim = connect(t, ens.Addr(m), victimSession, opts...)
	w.adv = connect(t, ens.Addr(m), otherSession, framework.WithAuth("digest", []byte("adversary:secret")))
	w.sessions[w.victim.SessionID()] = true
	return r
}

// execute runs the operation, the move, and every check.
func (r *xrun) execute() {
	t := r.t
	var cancelBG context.CancelFunc
	r.bg, cancelBG = context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancelBG()
	defer close(r.unblock)
	// The zxid before the run: nodes made later by the victim are its own.
	marker, st, err := r.w.adv.CreateStat(r.bg, r.w.base, nil, framework.WithParents())
	require.NoError(t, err, "make the run's base")
	r.startZxid = st.Czxid
	r.recordAdv(marker, st)
	round, err := r.op.setup(r.bg, r)
	require.NoError(t, err, "set up %s", r.op.name)
	r.round = round
	require.NoError(t, r.w.victim.Sync(r.bg, "/"))
	for _, czxid := range copyNodes(r.advNodes) {
		r.callZxid = max(r.callZxid, czxid)
	}
	// Count and arm from here.
	r.mu.Lock()
	r.n, r.armed, r.victimOps = 0, r.k > 0, nil
	r.counting = r.k == 0
	r.mu.Unlock()
	deadline := xDeadline
	if r.move.name == "held-ctx" {
		deadline = xHeldDeadline
	}
	r.ctx, r.cancel = context.WithTimeout(r.bg, deadline)
	defer r.cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		defer close(r.callDone)
		defer func() {
			if p := recover(); p != nil {
				r.violate("the operation panicked: %v", p)
				done <- fmt.Errorf("explorer: the operation panicked: %v", p)
			}
		}()
		done <- round.call(r.ctx)
	}()
	var callErr error
	select {
	case callErr = <-done:
	case <-r.bg.Done():
		t.Fatalf("%s did not return within %v", r.op.name, 3*time.Minute)
	}
	returned := time.Now()
	took := returned.Sub(start)
	r.mu.Lock()
	closedAt := r.closedAt
	r.mu.Unlock()
	if !closedAt.IsZero() && time.Since(closedAt) > xPrompt {
		r.violate("promptness: %s returned %v after its client was closed (%v)", r.op.name, time.Since(closedAt).Round(time.Millisecond), callErr)
	}
	if took > deadline+xPrompt {
		r.violate("promptness: %s returned after %v, its context's deadline was %v (%v)", r.op.name, took.Round(time.Millisecond), deadline, callErr)
	}
	if r.healAfterCall.Load() {
		r.w.proxy.Heal()
	}
	t.Logf("%s returned after %v: %v", r.op.name, took.Round(time.Millisecond), callErr)
	r.waitBackground() // the contender is in, or will not be
	if r.contended.Load() && callErr == nil && r.contendedAt.Before(returned) {
		r.violate("exclusion: %s returned success while a contender held what it takes, got %s", r.op.name, r.contendedWhy)
	}
	if r.lagged.Load() {
		healPeers(t)
		healthy(t)
	}
	if r.releaseContender != nil {
		r.releaseContender()
	}
	if r.contender != nil {
		_ = r.contender.Close()
	}
	r.waitBackground() // the move's own steps (a heal, a close) are done before the checks
	if round.after != nil && !r.clientClosed.Load() {
		for _, v := range round.after(r.bg, callErr) {
			r.violate("%s", v)
		}
	}
	if callErr == nil && round.undo != nil && !r.clientClosed.Load() {
		uctx, ucancel := context.WithTimeout(r.bg, deadline)
		start := time.Now()
		err := round.undo(uctx)
		ucancel()
		bound := deadline
		if round.undoCloses {
			bound = max(deadline, xCleanup)
		}
		if took := time.Since(start); took > bound+xPrompt {
			r.violate("promptness: the undo of %s returned after %v, its context's deadline was %v (%v)", r.op.name, took.Round(time.Millisecond), deadline, err)
		}
		t.Logf("undo: %v", err)
		if r.healAfterCall.Load() {
			r.w.proxy.Heal()
		}
	}
	r.waitBackground()
	r.w.proxy.Heal()
	r.mu.Lock()
	r.armed = false
	r.mu.Unlock()
	if round.close != nil && !r.closedEarly.Load() {
		_ = round.close()
	}
	if !r.clientClosed.Load() {
		_ = r.w.victim.WaitGuaranteedDeletes(r.bg)
	}
	// A closed client's session ends with its Close (its ephemeral nodes go with it): the
	// finals look once it returned.
	r.closing.Wait()
	if round.final != nil { // also with the client closed: finals read through the adversary
		for _, v := range round.final(r.bg) {
			r.violate("%s", v)
		}
	}
	r.checkOwnership()
	r.checkLeftovers()
}

// checkOwnership: every node another client made and did not delete itself is still
// there with its czxid, unless the operation may take it.
func (r *xrun) checkOwnership() {
	require.NoError(r.t, r.w.adv.Sync(r.bg, "/"))
	r.mu.Lock()
	adv := copyNodes(r.advNodes)
	r.mu.Unlock()
	for p, czxid := range adv {
		if r.round.mayTake != nil && r.round.mayTake(p) {
			continue
		}
		st, err := r.w.adv.Exists(r.bg, p)
		if err != nil {
			r.violate("ownership: read %s: %v", p, err)
			continue
		}
		if st != nil && st.Czxid == czxid {
			continue
		}
		if st == nil && r.isContainer(p) {
			continue
		}
		what := "deleted"
		if st != nil {
			what = fmt.Sprintf("replaced (czxid 0x%x, was 0x%x)", st.Czxid, czxid)
		}
		if st == nil && r.deleteDecidedBlind(p) {
			r.t.Logf("limit: the victim's delete of %s (its protected name, made again by another client as the delete went out) was sent before any read of the new node: ZooKeeper has no delete bound to a node's identity", p)
			continue
		}
		r.violate("ownership: another client's node %s was %s by the victim (its requests on it: %s)", p, what, r.victimRequestsOn(p))
	}
}

// isContainer reports whether p was made as a container (the server reaps those).
func (r *xrun) isContainer(p string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.containers[p]
}

// deleteDecidedBlind reports whether the victim's delete of p (a protected name of its
// own) went out before any read of p the victim made after the move had answered: the
// delete was decided on the node the victim made, and only ZooKeeper could have told the
// replacement apart, which it cannot (a delete's condition is a version, not a czxid).
func (r *xrun) deleteDecidedBlind(p string) bool {
	if !framework.IsProtectedName(framework.NodeName(p)) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var del time.Time
	for _, o := range r.victimOps {
		if o.Path == p && o.Op == "delete" && o.Err == nil {
			del = o.End.Add(-o.Duration)
		}
	}
	if del.IsZero() {
		return false
	}
	for _, o := range r.victimOps {
		if o.Path == p && (o.Op == "getData" || o.Op == "exists") && o.End.After(r.movedAt) && o.End.Before(del) {
			return false
		}
	}
	return true
}

func (r *xrun) victimRequestsOn(p string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, o := range r.victimOps {
		if o.Path == p && o.Op != "exists" && o.Op != "getData" {
			out = append(out, fmt.Sprintf("%s→%v", o.Op, o.Err))
		}
	}
	if len(out) == 0 {
		return "none by path; a multi or a recursive delete"
	}
	return strings.Join(out, ", ")
}

// checkLeftovers: no ephemeral node of a victim session and no protected node of the
// victim under the base; after the base is deleted, no watch under it on any member.
func (r *xrun) checkLeftovers() {
	t := r.t
	r.w.sessionMu.Lock()
	sids := maps64(r.w.sessions)
	r.w.sessionMu.Unlock()
	var left []string
	ok := waitFor(r.bg, 15*time.Second, func() bool {
		owners, err := zktest.EphemeralOwners(leaderAddr(t))
		if err != nil {
			return false
		}
		left = left[:0]
		for sid, nodes := range owners {
			if !sids[sid] {
				continue
			}
			for _, n := range nodes {
				if strings.HasPrefix(n, r.w.base+"/") {
					left = append(left, n)
				}
			}
		}
		return len(left) == 0
	})
	if !ok {
		r.violate("cleanliness: the victim's ephemeral nodes left: %v", left)
	}
	r.mu.Lock()
	adv := copyNodes(r.advNodes)
	r.mu.Unlock()
	for _, n := range r.snapshot(r.bg) {
		if framework.IsProtectedName(framework.NodeName(n.path)) && adv[n.path] != n.stat.Czxid && n.stat.EphemeralOwner == 0 {
			r.violate("cleanliness: the victim's protected node %s left", n.path)
		}
	}
	require.NoError(t, r.w.adv.Delete(r.bg, r.w.base, framework.WithChildren(), framework.Quietly()))
	var left2 []string
	ok = waitFor(r.bg, 15*time.Second, func() bool {
		left2 = left2[:0]
		for i := 0; i < ens.Size(); i++ {
			out, err := zktest.FourLetterWord(ens.Addr(i), "wchc", 5*time.Second)
			if err != nil {
				return false
			}
			left2 = append(left2, victimWatches(out, sids, r.w.base)...)
		}
		return len(left2) == 0
	})
	if !ok {
		r.violate("cleanliness: the victim's watches left under %s: %v", r.w.base, left2)
	}
}

// victimWatches lists the watches at or under base that wchc's output (a session id, then
// its paths indented) gives to one of sids: other clients' watches are not the victim's.
func victimWatches(wchc string, sids map[int64]bool, base string) []string {
	var out []string
	var sid int64
	for _, line := range strings.Split(wchc, "\n") {
		if strings.HasPrefix(line, "0x") {
			sid = 0
			fmt.Sscanf(line, "0x%x", &sid)
			continue
		}
		p := strings.TrimSpace(line)
		if sids[sid] && (p == base || strings.HasPrefix(p, base+"/")) {
			out = append(out, fmt.Sprintf("0x%x %s", sid, p))
		}
	}
	return out
}

func maps64(m map[int64]bool) map[int64]bool {
	out := make(map[int64]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
