package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
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

// The scenario family of issue 28: every recipe that owns or consumes nodes, run
//
//   - twice on one client (two instances share a session, so ephemeralOwner cannot tell
//     their nodes apart): the second never takes the first's node for its own, each
//     release or close deletes only its own node, cancelling or closing one leaves the
//     other's ownership intact, and never more hold than allowed across both;
//   - across name reuse: while an instance holds, waits or consumes, an admin deletes the
//     recipe's nodes and their parent and makes the parent again (sequence numbers
//     restart at 0), and other instances (on another client and on the same one) make
//     nodes that reuse the names. The first instance's release, close or consume never
//     deletes or claims a new node, a waiter never becomes an owner on the stale view,
//     and the loss is reported where the API can.
//
// Each scenario's checker is the ownership ledger (below): a node (path and czxid) is
// never owned by two instances, no instance's node is deleted or replaced by another
// instance, and nothing is left; holders are counted by the overlap checker; leaks by
// leakcheck and env.checkClean. Everything runs in the fast profile (make test).

// nodeID is one node: a path and the czxid of the node at it (a path made again is
// another node).
type nodeID struct {
	path  string
	czxid int64
}

func (n nodeID) String() string { return fmt.Sprintf("%s (czxid 0x%x)", n.path, n.czxid) }

// ownLedger is the ownership checker. Instances claim the nodes the recipe says are
// theirs (read by an admin right after the recipe said so) and give them up when they
// release or close them; an admin's deletion ends a claim without anyone giving it up.
// It reports: a node claimed by two instances at once; an instance giving up a node it
// does not hold; a claimed node that is gone or replaced (another czxid at its path)
// while its owner still holds it, that is, deleted by someone else; and, at the end,
// claims never given up or nodes left in the tree.
type ownLedger struct {
	mu       sync.Mutex
	held     map[nodeID]string // node -> the instance that holds it
	problems []string
	ops      int
}

func newOwnLedger() *ownLedger { return &ownLedger{held: map[nodeID]string{}} }

func (l *ownLedger) addf(format string, args ...any) {
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
}

// claim records that inst owns n.
func (l *ownLedger) claim(inst string, n nodeID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops++
	if o, ok := l.held[n]; ok && o != inst {
		l.addf("node %v is owned by two instances: %s and %s", n, o, inst)
		return
	}
	l.held[n] = inst
}

// release records that inst gave n up (deleted it).
func (l *ownLedger) release(inst string, n nodeID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops++
	o, ok := l.held[n]
	if !ok || o != inst {
		l.addf("%s gave up node %v, which it does not hold (holder: %q)", inst, n, o)
		return
	}
	delete(l.held, n)
}

// releasePath releases the node inst holds at path.
func (l *ownLedger) releasePath(inst, path string) {
	l.mu.Lock()
	var n nodeID
	for m, o := range l.held {
		if m.path == path && o == inst {
			n = m
		}
	}
	l.mu.Unlock()
	if n.path == "" {
		n.path = path
	}
	l.release(inst, n)
}

// dropped records that an admin deleted n: whoever held it holds it no more.
func (l *ownLedger) dropped(n nodeID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.held, n)
}

// droppedUnder drops every claim on a node under dir (an admin deleted the subtree).
func (l *ownLedger) droppedUnder(dir string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var insts []string
	for n, o := range l.held {
		if strings.HasPrefix(n.path, dir+"/") {
			delete(l.held, n)
			insts = append(insts, o)
		}
	}
	return insts
}

// survivors checks tree (path -> czxid, as an admin read it) against the claims: every
// node held is there, the same node.
func (l *ownLedger) survivors(when string, tree map[string]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops++
	for n, o := range l.held {
		z, ok := tree[n.path]
		switch {
		case !ok:
			l.addf("%s: %s's node %v is gone: deleted by someone else", when, o, n)
		case z != n.czxid:
			l.addf("%s: %s's node %v was replaced by another (czxid 0x%x)", when, o, n, z)
		}
	}
}

// finish checks that no claim is left and that tree (the recipe's nodes at the end) is
// empty.
func (l *ownLedger) finish(tree map[string]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for n, o := range l.held {
		l.addf("at the end %s still holds %v", o, n)
	}
	var left []string
	for p := range tree {
		left = append(left, p)
	}
	sort.Strings(left)
	for _, p := range left {
		l.addf("at the end node %s is left", p)
	}
}

func (l *ownLedger) report() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.problems)
}

// famWorld is one family scenario's world: client a (two instances share it), client b
// (another process) and an admin client.
type famWorld struct {
	t           *testing.T
	e           *env
	ctx         context.Context
	a, b, admin *framework.Client
	led         *ownLedger
}

func newFamWorld(t *testing.T) *famWorld {
	t.Helper()
	leakcheck.Check(t)
	e := newEnv(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &famWorld{t: t, e: e, ctx: ctx, a: e.victim, b: e.others[0], admin: e.others[1], led: newOwnLedger()}
}

// id reads the node at path (after a sync): what an instance that says it owns path
// owns.
func (w *famWorld) id(path string) nodeID {
	w.t.Helper()
	require.NoError(w.t, w.admin.Sync(w.ctx, path))
	st, err := w.admin.Exists(w.ctx, path)
	require.NoError(w.t, err)
	require.NotNil(w.t, st, "no node at %s", path)
	return nodeID{path, st.Czxid}
}

// claim records that inst owns the node at path.
func (w *famWorld) claim(inst, path string) nodeID {
	w.t.Helper()
	n := w.id(path)
	w.led.claim(inst, n)
	return n
}

// tree returns the nodes under root that have no children (path -> czxid), read by the
// admin after a sync; a missing root is an empty tree.
func (w *famWorld) tree(root string) map[string]int64 {
	w.t.Helper()
	out := map[string]int64{}
	require.NoError(w.t, w.admin.Sync(w.ctx, root))
	var walk func(p string)
	walk = func(p string) {
		kids, st, err := w.admin.Children(w.ctx, p)
		if errors.Is(err, framework.ErrNoNode) {
			return
		}
		require.NoError(w.t, err)
		if len(kids) == 0 {
			if p != root {
				out[p] = st.Czxid
			}
			return
		}
		for _, k := range kids {
			walk(framework.JoinPath(p, k))
		}
	}
	walk(root)
	return out
}

// survivors checks the claims against the tree under root.
func (w *famWorld) survivors(when, root string) {
	w.t.Helper()
	for _, c := range []*framework.Client{w.a, w.b} {
		require.NoError(w.t, c.WaitGuaranteedDeletes(w.ctx))
	}
	w.led.survivors(when, w.tree(root))
}

// remake deletes dir and everything under it in one transaction (no contender sees a
// part of it gone), and makes dir again (empty, a container, as recipes make their
// parents; a contender may have made it first): the sequence numbers under it restart
// at 0.
func (w *famWorld) remake(dir string) {
	w.t.Helper()
	for attempt := 0; ; attempt++ {
		var ops []framework.Op
		var walk func(p string) error
		walk = func(p string) error {
			kids, _, err := w.admin.Children(w.ctx, p)
			if err != nil {
				return err
			}
			for _, k := range kids {
				if err := walk(framework.JoinPath(p, k)); err != nil {
					return err
				}
			}
			ops = append(ops, framework.DeleteOp(p, -1))
			return nil
		}
		err := walk(dir)
		if err == nil {
			_, err = w.admin.Transaction(w.ctx, ops...)
		}
		if err == nil {
			break
		}
		// A contender made or deleted a node between the listing and the transaction.
		require.True(w.t, errors.Is(err, framework.ErrNoNode) || errors.Is(err, framework.ErrNotEmpty), "remake %s: %v", dir, err)
		require.Less(w.t, attempt, 50, "remake %s: %v", dir, err)
	}
	_, err := w.admin.Create(w.ctx, dir, nil, framework.WithMode(framework.Container), framework.WithContainerParents())
	if !errors.Is(err, framework.ErrNodeExists) {
		require.NoError(w.t, err)
	}
}

// finish checks that nothing is left under root, reports the ledger's problems, and
// checks the env's cleanliness.
func (w *famWorld) finish(root string) {
	w.t.Helper()
	for _, c := range []*framework.Client{w.a, w.b} {
		require.NoError(w.t, c.WaitGuaranteedDeletes(w.ctx))
	}
	// Nodes that only a container parent holds up go when it is reaped: wait for the
	// recipe's leaves, not for their directories.
	var tree map[string]int64
	deadline := time.Now().Add(20 * time.Second)
	for {
		tree = w.tree(root)
		if len(tree) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.led.finish(tree)
	probs := w.led.report()
	for _, p := range probs {
		w.t.Error("ownership: " + p)
	}
	count(w.t, "ownership", checkCount{ops: w.led.ops, violations: len(probs)})
	w.e.checkClean()
}

// famLease is what the lock scenarios need of a lease.
type famLease interface {
	Release(ctx context.Context) error
	Done() <-chan struct{}
}

// leaseNodes returns the nodes a lease holds.
func leaseNodes(l famLease) []string {
	switch x := l.(type) {
	case *mutex.Lease:
		return []string{x.Node()}
	case *semaphore.Lease:
		return []string{x.Node()}
	case *rwlock.Lease:
		return []string{x.Node()}
	case *multilock.MultiLease:
		var out []string
		for _, p := range x.Parts() {
			out = append(out, leaseNodes(p)...)
		}
		return out
	}
	panic(fmt.Sprintf("leaseNodes: %T", l))
}

// lockInst is one instance of a lock recipe: hold takes it as the scenario's holders do,
// wait as a contender that must wait while the holders hold.
type lockInst struct {
	hold, wait         func(ctx context.Context) (famLease, error)
	holdExcl, waitExcl bool
}

// lockKind is one lock recipe of the family.
type lockKind struct {
	name    string
	holders int // how many hold together (the scenario fills them)
	dir     func(path string) string
	newInst func(c *framework.Client, path string) (lockInst, error)
}

func lease[L famLease](f func(context.Context) (L, error)) func(context.Context) (famLease, error) {
	return func(ctx context.Context) (famLease, error) {
		l, err := f(ctx)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

func sameDir(p string) string { return p }

var famLocks = []lockKind{
	{name: "mutex", holders: 1, dir: sameDir, newInst: func(c *framework.Client, p string) (lockInst, error) {
		m, err := mutex.New(c, p)
		if err != nil {
			return lockInst{}, err
		}
		return lockInst{hold: lease(m.Acquire), wait: lease(m.Acquire), holdExcl: true, waitExcl: true}, nil
	}},
	{name: "semaphore", holders: 2, dir: func(p string) string { return p + "/leases" }, newInst: func(c *framework.Client, p string) (lockInst, error) {
		s, err := semaphore.New(c, p, 2)
		if err != nil {
			return lockInst{}, err
		}
		return lockInst{hold: lease(s.Acquire), wait: lease(s.Acquire)}, nil
	}},
	{name: "semaphore-mutex", holders: 1, dir: func(p string) string { return p + "/leases" }, newInst: func(c *framework.Client, p string) (lockInst, error) {
		m, err := semaphore.NewMutex(c, p)
		if err != nil {
			return lockInst{}, err
		}
		return lockInst{hold: lease(m.Acquire), wait: lease(m.Acquire), holdExcl: true, waitExcl: true}, nil
	}},
	{name: "rwlock-write", holders: 1, dir: sameDir, newInst: func(c *framework.Client, p string) (lockInst, error) {
		rw, err := rwlock.New(c, p)
		if err != nil {
			return lockInst{}, err
		}
		return lockInst{hold: lease(rw.WriteLock().Acquire), wait: lease(rw.WriteLock().Acquire), holdExcl: true, waitExcl: true}, nil
	}},
	{name: "rwlock-read", holders: 2, dir: sameDir, newInst: func(c *framework.Client, p string) (lockInst, error) {
		rw, err := rwlock.New(c, p)
		if err != nil {
			return lockInst{}, err
		}
		return lockInst{hold: lease(rw.ReadLock().Acquire), wait: lease(rw.WriteLock().Acquire), waitExcl: true}, nil
	}},
	{name: "multilock", holders: 1, dir: sameDir, newInst: func(c *framework.Client, p string) (lockInst, error) {
		m, err := multilock.NewFromPaths(c, p+"/one", p+"/two")
		if err != nil {
			return lockInst{}, err
		}
		return lockInst{hold: lease(m.Acquire), wait: lease(m.Acquire), holdExcl: true, waitExcl: true}, nil
	}},
}

// acquired is an acquisition's result, by instance.
type acquired struct {
	inst  string
	excl  bool
	lease famLease
	err   error
}

// goAcquire acquires in the background; the result goes to out.
func goAcquire(ctx context.Context, wg *sync.WaitGroup, out chan<- acquired, inst string, excl bool, f func(context.Context) (famLease, error)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		l, err := f(ctx)
		out <- acquired{inst, excl, l, err}
	}()
}

// famHold records a holding: its nodes in the ledger, the holder in the overlap checker.
type famHold struct {
	acquired
	nodes []nodeID
}

func (w *famWorld) hold(ov *overlap, a acquired) *famHold {
	w.t.Helper()
	require.NoError(w.t, a.err, "%s's acquisition", a.inst)
	ov.enter(a.excl)
	h := &famHold{acquired: a}
	for _, p := range leaseNodes(a.lease) {
		h.nodes = append(h.nodes, w.claim(a.inst, p))
	}
	return h
}

// release releases h, checks the error against wantLost, and that nothing of another
// instance went with it.
func (w *famWorld) release(ov *overlap, h *famHold, root string, wantLost bool) {
	w.t.Helper()
	ov.exit(h.excl)
	err := h.lease.Release(w.ctx)
	if wantLost {
		assert.Error(w.t, err, "%s's release of a lease whose node an admin deleted reports nothing", h.inst)
	} else {
		assert.NoError(w.t, err, "%s's release", h.inst)
		for _, n := range h.nodes {
			w.led.release(h.inst, n)
		}
	}
	w.survivors(h.inst+"'s release", root)
}

// waitNodes waits until the tree under dir has n leaves (contenders' nodes).
func (w *famWorld) waitNodes(dir string, n int) {
	w.t.Helper()
	require.Eventually(w.t, func() bool { return len(w.tree(dir)) >= n }, 30*time.Second, 20*time.Millisecond,
		"%d contenders' nodes under %s", n, dir)
}

// noneYet fails if an acquisition came back.
func noneYet(t *testing.T, out <-chan acquired, why string) {
	t.Helper()
	select {
	case a := <-out:
		t.Errorf("%s: %s's acquisition returned (err %v) %s", t.Name(), a.inst, a.err, why)
		if a.err == nil {
			_ = a.lease.Release(context.Background())
		}
	default:
	}
}

// next waits for the next acquisition to come back.
func (w *famWorld) next(out <-chan acquired) acquired {
	w.t.Helper()
	select {
	case a := <-out:
		return a
	case <-w.ctx.Done():
		w.t.Fatal("no contender got in")
		return acquired{}
	}
}

// settle lets what is in flight on the clients arrive: a sync on each (their requests
// before it are answered first).
func (w *famWorld) settle(path string) {
	for _, c := range []*framework.Client{w.a, w.b, w.admin} {
		_ = c.Sync(w.ctx, path)
	}
}

// TestFamilyLocksTwoInstances: two instances of each lock recipe on one client, and a
// third on another. The holders' nodes are theirs alone; a contender of the other
// instance waits (its node is its own), and cancelled it deletes only its node; each
// release deletes only its own node, and the next contender gets in; never more holders
// than allowed.
func TestFamilyLocksTwoInstances(t *testing.T) {
	for _, k := range famLocks {
		t.Run(k.name, func(t *testing.T) {
			start := time.Now()
			w := newFamWorld(t)
			path := w.e.base + "/lock"
			i1, err := k.newInst(w.a, path)
			require.NoError(t, err)
			i2, err := k.newInst(w.a, path)
			require.NoError(t, err)
			ib, err := k.newInst(w.b, path)
			require.NoError(t, err)
			ov := newOverlap(k.holders)
			out := make(chan acquired, 8)
			var wg sync.WaitGroup
			defer wg.Wait()
			// The holders, alternately of each instance on a.
			var holds []*famHold
			for i := range k.holders {
				inst, ii := "a1", i1
				if i%2 == 1 {
					inst, ii = "a2", i2
				}
				l, err := ii.hold(w.ctx)
				holds = append(holds, w.hold(ov, acquired{inst, ii.holdExcl, l, err}))
			}
			dir := k.dir(path)
			w.survivors("holders in", path)
			// A contender of each instance on a, one cancelled.
			cctx, ccancel := context.WithCancel(w.ctx)
			defer ccancel()
			cancelled := make(chan acquired, 1)
			i3, err := k.newInst(w.a, path)
			require.NoError(t, err)
			before := len(w.tree(dir))
			goAcquire(cctx, &wg, cancelled, "a3-cancelled", i3.waitExcl, i3.wait)
			w.waitNodes(dir, before+1)
			goAcquire(w.ctx, &wg, out, "a2-waiter", i2.waitExcl, i2.wait)
			goAcquire(w.ctx, &wg, out, "b-waiter", ib.waitExcl, ib.wait)
			w.settle(path)
			noneYet(t, out, "while the holders hold")
			noneYet(t, cancelled, "while the holders hold")
			ccancel()
			c := <-cancelled
			require.ErrorIs(t, c.err, context.Canceled, "the cancelled contender")
			w.survivors("a contender cancelled", path)
			noneYet(t, out, "while the holders hold, after another contender was cancelled")
			// Release the holders one by one; the waiters get in as they come.
			for _, h := range holds {
				w.release(ov, h, path, false)
			}
			for range 2 {
				h := w.hold(ov, w.next(out))
				w.settle(path)
				w.release(ov, h, path, false)
			}
			_, violations := ov.counts()
			assert.Zero(t, violations, "more holders than allowed")
			count(t, "overlap", checkCount{ops: 1, violations: violations})
			w.finish(path)
			t.Logf("family %s two-instances: %v", k.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestFamilyLocksNameReuse: an instance holds (a1), a contender of the same instance
// (a1-waiter) and one of another instance on the same client (a2-waiter) wait; an admin
// deletes the lock's nodes and parent and makes the parent again; instances on another
// client (b) and on the same client (a3) contend on the new parent, whose sequence
// numbers start again at 0. The holder's release deletes nothing of theirs and reports
// the loss; the waiters start over on the new parent and never hold on the stale view
// (never more holders than allowed, counting the holder as gone once its node is).
func TestFamilyLocksNameReuse(t *testing.T) {
	for _, k := range famLocks {
		t.Run(k.name, func(t *testing.T) {
			start := time.Now()
			w := newFamWorld(t)
			path := w.e.base + "/lock"
			i1, err := k.newInst(w.a, path)
			require.NoError(t, err)
			i2, err := k.newInst(w.a, path)
			require.NoError(t, err)
			i3, err := k.newInst(w.a, path)
			require.NoError(t, err)
			ib, err := k.newInst(w.b, path)
			require.NoError(t, err)
			ov := newOverlap(k.holders)
			out := make(chan acquired, 8)
			var wg sync.WaitGroup
			defer wg.Wait()
			var holds []*famHold
			for range k.holders {
				l, err := i1.hold(w.ctx)
				holds = append(holds, w.hold(ov, acquired{"a1", i1.holdExcl, l, err}))
			}
			dir := k.dir(path)
			n := len(w.tree(dir))
			goAcquire(w.ctx, &wg, out, "a1-waiter", i1.waitExcl, i1.wait)
			goAcquire(w.ctx, &wg, out, "a2-waiter", i2.waitExcl, i2.wait)
			w.waitNodes(dir, n+1) // a2's node at least (a1's may queue in-process)
			w.settle(path)
			noneYet(t, out, "while a1 holds")

			// The admin deletes everything and makes the parent again.
			w.remake(path)
			w.led.droppedUnder(path)
			for _, h := range holds {
				ov.exit(h.excl) // a holder whose node is gone holds no more
			}
			// The waiters start over on the new parent: the first in holds.
			first := w.hold(ov, w.next(out))
			live := []*famHold{first}
			pending := 1 // the other waiter
			if k.holders > 1 && !i1.waitExcl { // the second waiter gets in too
				live = append(live, w.hold(ov, w.next(out)))
				pending--
			}
			w.settle(path)
			w.survivors("after the parent was made again", path)
			// The old holder lets go: its nodes are gone, nothing else goes, and its own
			// waiter does not get in on its stale holding while the new holders hold.
			for _, h := range holds {
				err := h.lease.Release(w.ctx)
				assert.Error(t, err, "a1's release of a lease whose node an admin deleted reports nothing")
				w.settle(path)
				w.survivors("a1's stale release", path)
			}
			w.settle(path)
			pending -= takeArrived(out, &live, w, ov)
			// b and a3 contend on the new parent.
			goAcquire(w.ctx, &wg, out, "b", ib.waitExcl, ib.wait)
			goAcquire(w.ctx, &wg, out, "a3", i3.waitExcl, i3.wait)
			pending += 2
			w.settle(path)
			for len(live) > 0 || pending > 0 {
				if len(live) == 0 {
					select {
					case a := <-out:
						live = append(live, w.hold(ov, a))
						pending--
					case <-w.ctx.Done():
						t.Fatal("a contender never got in")
					}
					continue
				}
				h := live[0]
				live = live[1:]
				w.settle(path)
				pending -= takeArrived(out, &live, w, ov)
				w.release(ov, h, path, false)
			}
			_, violations := ov.counts()
			assert.Zero(t, violations, "more holders than allowed")
			count(t, "overlap", checkCount{ops: 1, violations: violations})
			w.finish(path)
			t.Logf("family %s name-reuse: %v", k.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// takeArrived takes in any contender that got in meanwhile (the overlap checker counts
// it against the holders still live), and returns how many.
func takeArrived(out <-chan acquired, live *[]*famHold, w *famWorld, ov *overlap) int {
	n := 0
	for {
		select {
		case a := <-out:
			*live = append(*live, w.hold(ov, a))
			n++
		default:
			return n
		}
	}
}
