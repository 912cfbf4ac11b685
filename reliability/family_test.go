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

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	zatomic "github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
)

// The ownership scenario family: every recipe that owns or consumes nodes, run
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
			pending := 1                       // the other waiter
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

// famScenario is one recipe's pair of scenarios in the family (beside the locks').
type famScenario struct {
	name       string
	two, reuse func(w *famWorld)
}

// TestFamilyRecipes runs, for every recipe that owns or consumes nodes other than the
// locks, its two-instances and name-reuse scenarios.
func TestFamilyRecipes(t *testing.T) {
	for _, s := range famScenarios {
		for _, k := range []struct {
			kind string
			run  func(w *famWorld)
		}{{"two-instances", s.two}, {"name-reuse", s.reuse}} {
			t.Run(s.name+"/"+k.kind, func(t *testing.T) {
				start := time.Now()
				w := newFamWorld(t)
				k.run(w)
				w.finish(w.e.base)
				t.Logf("family %s %s: %v", s.name, k.kind, time.Since(start).Round(time.Millisecond))
			})
		}
	}
}

// waitFor waits (bounded) until ok holds.
func (w *famWorld) waitFor(what string, ok func() bool) {
	w.t.Helper()
	require.Eventually(w.t, ok, 30*time.Second, 20*time.Millisecond, what)
}

// hooked connects a client of its own (to the ensemble, directly) whose next request of
// kind op runs fn first, synchronously, once armed: the moment between a recipe's read
// and its write, made deterministic.
func (w *famWorld) hooked(op string) (*framework.Client, func(fn func())) {
	var mu sync.Mutex
	var pending func()
	c := connect(w.t, ens.ConnectString(), otherSession, framework.WithRequestHook(func(o string) {
		mu.Lock()
		fn := pending
		if o == op {
			pending = nil
		} else {
			fn = nil
		}
		mu.Unlock()
		if fn != nil {
			fn()
		}
	}))
	w.t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if pending != nil {
			w.t.Errorf("the hook on the next %q never ran: the scenario did not happen", op)
		}
	})
	return c, func(fn func()) { mu.Lock(); pending = fn; mu.Unlock() }
}

var famScenarios = []famScenario{
	{name: "leader-latch", two: latchTwo, reuse: latchReuse},
	{name: "leader-selector", two: selectorTwo, reuse: selectorReuse},
	{name: "barrier", two: barrierTwo, reuse: barrierReuse},
	{name: "doublebarrier", two: doubleBarrierTwo, reuse: doubleBarrierReuse},
	{name: "persistentnode", two: pnodeTwo, reuse: pnodeReuse},
	{name: "groupmember", two: memberTwo, reuse: memberReuse},
	{name: "discovery", two: discoveryTwo, reuse: discoveryReuse},
	{name: "simplequeue", two: simpleQueueTwo, reuse: simpleQueueReuse},
	{name: "queue", two: queueTwo(false), reuse: queueReuse(false)},
	{name: "queue-lockpath", two: queueTwo(true), reuse: queueReuse(true)},
	{name: "sharedcount", two: countTwo, reuse: countReuse},
	{name: "atomic", two: atomicTwo, reuse: atomicReuse},
}

// latchTwo: two latches on one client: the first leads, the second waits with a node of
// its own; closing the leader deletes only its node and the second leads.
func latchTwo(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/latch"
	l1, err := leader.NewLatch(w.a, path, "a1")
	require.NoError(t, err)
	l2, err := leader.NewLatch(w.a, path, "a2")
	require.NoError(t, err)
	defer l1.Close()
	defer l2.Close()
	require.NoError(t, l1.Start(ctx))
	require.NoError(t, l1.Await(ctx))
	require.NoError(t, l2.Start(ctx))
	w.claim("a1", l1.Node())
	w.claim("a2", l2.Node())
	w.settle(path)
	assert.True(t, l1.HasLeadership(), "a1 leads")
	assert.False(t, l2.HasLeadership(), "a2 leads beside a1")
	node := l1.Node()
	require.NoError(t, l1.Close())
	w.led.releasePath("a1", node)
	w.survivors("a1 closed", path)
	require.NoError(t, l2.Await(ctx))
	node = l2.Node()
	require.NoError(t, l2.Close())
	w.led.releasePath("a2", node)
}

// latchReuse: a1 leads and a2 waits (one client); the admin deletes their nodes and the
// parent and makes it again; b joins. a1's term ends; in the end exactly one leads, the
// one whose node is first, each latch with a node of its own; each Close deletes only
// its own.
func latchReuse(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/latch"
	var ls []*leader.Latch
	for _, x := range []struct {
		c  *framework.Client
		id string
	}{{w.a, "a1"}, {w.a, "a2"}, {w.b, "b"}} {
		l, err := leader.NewLatch(x.c, path, x.id)
		require.NoError(t, err)
		defer l.Close()
		ls = append(ls, l)
	}
	require.NoError(t, ls[0].Start(ctx))
	require.NoError(t, ls[0].Await(ctx))
	term, err := ls[0].Term()
	require.NoError(t, err)
	require.NoError(t, ls[1].Start(ctx))
	w.waitNodes(path, 2)
	w.remake(path)
	select {
	case <-term.Done():
	case <-ctx.Done():
		t.Fatal("a1's term did not end when its node was deleted")
	}
	require.NoError(t, ls[2].Start(ctx))
	// Settled: every latch has a node of its own, and exactly the first leads.
	w.waitFor("three latch nodes, one leader, the first", func() bool {
		tree := w.tree(path)
		if len(tree) != 3 {
			return false
		}
		ps, err := ls[2].Participants(ctx)
		if err != nil || len(ps) != 3 {
			return false
		}
		leaders := 0
		for _, l := range ls {
			if l.HasLeadership() {
				leaders++
				if l.Node() != ps[0].Node {
					return false
				}
			}
		}
		return leaders == 1
	})
	for i, l := range ls {
		w.claim(l.ID(), l.Node())
		_ = i
	}
	for _, l := range ls {
		node := l.Node()
		require.NoError(t, l.Close())
		w.led.releasePath(l.ID(), node)
		w.survivors(l.ID()+" closed", path)
	}
}

// selectorRun is a selector's function: it counts its leadership in ov, reports that it
// runs, and leads until its context ends or it is told to stop.
func selectorRun(ov *overlap, running chan<- string, id string, stop <-chan struct{}, ended chan<- string) func(context.Context) error {
	return func(ctx context.Context) error {
		ov.enter(true)
		running <- id
		select {
		case <-ctx.Done():
			ov.exit(true)
			ended <- id
		case <-stop:
			ov.exit(true)
		}
		return nil
	}
}

// selectorTwo: two selectors on one client: one leads at a time; interrupting the first
// lets the second lead; neither deletes the other's node.
func selectorTwo(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/selector"
	ov := newOverlap(1)
	running, ended := make(chan string, 4), make(chan string, 4)
	stop := make(chan struct{})
	defer close(stop)
	s1, err := leader.NewSelector(w.a, path, "a1", selectorRun(ov, running, "a1", stop, ended))
	require.NoError(t, err)
	s2, err := leader.NewSelector(w.a, path, "a2", selectorRun(ov, running, "a2", stop, ended))
	require.NoError(t, err)
	defer s1.Close()
	defer s2.Close()
	require.NoError(t, s1.Start(ctx))
	require.Equal(t, "a1", <-running)
	require.NoError(t, s2.Start(ctx))
	w.waitNodes(path, 2)
	ps, err := s1.Participants(ctx)
	require.NoError(t, err)
	for _, p := range ps {
		w.claim(p.ID, p.Node)
	}
	w.settle(path)
	select {
	case id := <-running:
		t.Errorf("%s leads beside a1", id)
	default:
	}
	s1.Interrupt()
	require.Equal(t, "a1", <-ended)
	require.Equal(t, "a2", <-running)
	w.led.releasePath("a1", ps[0].Node)
	w.survivors("a1 interrupted", path)
	require.NoError(t, s2.Close())
	w.led.releasePath("a2", ps[1].Node)
	require.NoError(t, s1.Close())
	_, v := ov.counts()
	assert.Zero(t, v, "two selectors led at once")
}

// selectorReuse: a1 leads, a2 waits; the admin deletes their nodes and the parent and
// makes it again; a1's function is told (its context ends); b joins; from then on one
// leads at a time, and Close deletes only its own node.
func selectorReuse(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/selector"
	ov := newOverlap(1)
	running, ended := make(chan string, 8), make(chan string, 8)
	stop := make(chan struct{})
	defer close(stop)
	var ss []*leader.Selector
	for _, x := range []struct {
		c  *framework.Client
		id string
	}{{w.a, "a1"}, {w.a, "a2"}, {w.b, "b"}} {
		s, err := leader.NewSelector(x.c, path, x.id, selectorRun(ov, running, x.id, stop, ended))
		require.NoError(t, err)
		defer s.Close()
		ss = append(ss, s)
	}
	require.NoError(t, ss[0].Start(ctx))
	require.Equal(t, "a1", <-running)
	require.NoError(t, ss[1].Start(ctx))
	w.waitNodes(path, 2)
	w.remake(path)
	// a1's function learns that its node went; until it returned it is counted, and a2
	// (started over on the new parent) may lead at once: the overlap of that moment is
	// ZooKeeper's to allow, not ours to count.
	ov.reset()
	require.NoError(t, ss[2].Start(ctx))
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case id := <-ended:
			assert.Equal(t, "a1", id)
			got["a1 ended"] = true
		case id := <-running:
			got[id] = true
		case <-ctx.Done():
			t.Fatalf("a1's end and a new leader: %v", got)
		}
	}
	for _, s := range ss {
		require.NoError(t, s.Close())
		w.survivors(s.ID()+" closed", path)
	}
	_, v := ov.counts()
	assert.Zero(t, v, "two selectors led at once")
}

// reset forgets the holders counted so far (a phase where the checker does not apply ended).
func (o *overlap) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.excl, o.shared, o.violations = 0, 0, 0
}

// barrierTwo: two barriers on one path and client: the second's Wait does not pass while
// the first's barrier is set, and passes once it is removed.
func barrierTwo(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/barrier/b"
	b1, err := barrier.New(w.a, path)
	require.NoError(t, err)
	b2, err := barrier.New(w.a, path)
	require.NoError(t, err)
	require.NoError(t, b1.Set(ctx))
	passed := make(chan error, 1)
	go func() { passed <- b2.Wait(ctx) }()
	w.settle(path)
	select {
	case err := <-passed:
		t.Errorf("b2's Wait passed a barrier b1 set (err %v)", err)
	default:
	}
	require.NoError(t, b1.Remove(ctx))
	require.NoError(t, <-passed)
	require.NoError(t, w.admin.Delete(ctx, w.e.base+"/barrier", framework.Quietly()))
}

// barrierReuse: a waiter on one client, the barrier set by another instance on it; the
// admin deletes it and its parent and b sets it again: the waiter passes (it saw it
// gone) or waits for the new one; it passes once b removes it.
func barrierReuse(w *famWorld) {
	t, ctx := w.t, w.ctx
	dir := w.e.base + "/barrier"
	path := dir + "/b"
	b1, err := barrier.New(w.a, path)
	require.NoError(t, err)
	b2, err := barrier.New(w.a, path)
	require.NoError(t, err)
	bb, err := barrier.New(w.b, path)
	require.NoError(t, err)
	require.NoError(t, b1.Set(ctx))
	passed := make(chan error, 1)
	go func() { passed <- b2.Wait(ctx) }()
	w.settle(path)
	w.remake(dir)
	require.NoError(t, bb.Set(ctx))
	// Reads across sessions are not linearizable: a's server may not have applied b's
	// create yet (seen once on a loaded machine) unless a syncs first.
	require.NoError(t, w.a.Sync(ctx, path))
	set, err := b1.IsSet(ctx)
	require.NoError(t, err)
	assert.True(t, set, "b1 sees b's barrier")
	require.NoError(t, bb.Remove(ctx))
	require.NoError(t, <-passed)
	require.NoError(t, b1.Remove(ctx), "removing a barrier already gone is fine")
	require.NoError(t, w.admin.Delete(ctx, dir, framework.Quietly()))
}

// enterAll enters every member, together, and claims their nodes.
func (w *famWorld) enterAll(ids []string, ds []*doublebarrier.DoubleBarrier) {
	t := w.t
	errs := make(chan error, len(ds))
	for _, d := range ds {
		go func() { errs <- d.Enter(w.ctx) }()
	}
	for range ds {
		require.NoError(t, <-errs)
	}
	for i, d := range ds {
		w.claim(ids[i], d.Node())
	}
}

// doubleBarrierTwo: two members on one client: each enters with a node of its own and
// both leave; nothing is left.
func doubleBarrierTwo(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/double"
	var ds []*doublebarrier.DoubleBarrier
	for range 2 {
		d, err := doublebarrier.New(w.a, path, 2)
		require.NoError(t, err)
		ds = append(ds, d)
	}
	ids := []string{"a1", "a2"}
	w.enterAll(ids, ds)
	nodes := []string{ds[0].Node(), ds[1].Node()}
	errs := make(chan error, 2)
	for _, d := range ds {
		go func() { errs <- d.Leave(ctx) }()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	for i := range ds {
		w.led.releasePath(ids[i], nodes[i])
	}
	w.survivors("both left", path)
}

// doubleBarrierReuse: a1 (client a) and b are in; the admin deletes the barrier and makes
// its parent again; a2 (client a) and b2 enter a new round there. a1's and b's Leave
// fail (their nodes are gone) and delete nothing of the new round; the new round leaves.
func doubleBarrierReuse(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/double"
	mk := func(c *framework.Client) *doublebarrier.DoubleBarrier {
		d, err := doublebarrier.New(c, path, 2)
		require.NoError(t, err)
		return d
	}
	old := []*doublebarrier.DoubleBarrier{mk(w.a), mk(w.b)}
	w.enterAll([]string{"a1", "b"}, old)
	w.remake(path)
	w.led.droppedUnder(path)
	fresh := []*doublebarrier.DoubleBarrier{mk(w.a), mk(w.b)}
	w.enterAll([]string{"a2", "b2"}, fresh)
	readyBefore := w.id(path + "/ready")
	for i, d := range old {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := d.Leave(lctx)
		cancel()
		assert.Error(t, err, "old member %d left a barrier whose node was deleted", i)
		w.survivors("an old member's Leave", path)
	}
	assert.Equal(t, readyBefore, w.id(path+"/ready"), "the new round's ready")
	nodes := []string{fresh[0].Node(), fresh[1].Node()}
	errs := make(chan error, 2)
	for _, d := range fresh {
		go func() { errs <- d.Leave(ctx) }()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	w.led.releasePath("a2", nodes[0])
	w.led.releasePath("b2", nodes[1])
}

// pnodeTwo: two Nodes at one path on one client: the second never takes the first's
// node, and its Close leaves it.
func pnodeTwo(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/pn/node"
	n1, err := persistentnode.New(w.a, path, []byte("a1"), persistentnode.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	defer n1.Close()
	require.NoError(t, n1.Start())
	require.NoError(t, n1.WaitForInitialCreate(ctx))
	w.claim("a1", path)
	n2, err := persistentnode.New(w.a, path, []byte("a2"), persistentnode.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	defer n2.Close()
	require.NoError(t, n2.Start())
	require.NoError(t, n2.WaitForInitialCreate(ctx)) // it found a node, not its own
	w.settle(path)
	// a2 sets its data into a1's node (as Curator does; documented), nothing more.
	w.survivors("a2 started", w.e.base+"/pn")
	require.NoError(t, n2.Close())
	w.survivors("a2 closed", w.e.base+"/pn")
	require.NoError(t, n1.Close())
	w.led.releasePath("a1", path)
}

// pnodeReuse: a1 keeps an unprotected ephemeral-sequential node; the admin deletes it
// and its parent and makes the parent again; b and a2 (same client) make nodes with the
// same name prefix there (the sequence restarts: b's may have a1's old name). a1 makes
// its own again, never takes theirs, and its Close deletes only its own.
func pnodeReuse(w *famWorld) {
	t, ctx := w.t, w.ctx
	dir := w.e.base + "/pn"
	mk := func(c *framework.Client, id string) *persistentnode.Node {
		n, err := persistentnode.New(c, dir+"/member-", []byte(id), persistentnode.WithMode(framework.EphemeralSequential))
		require.NoError(t, err)
		return n
	}
	n1 := mk(w.a, "a1")
	defer n1.Close()
	require.NoError(t, n1.Start())
	require.NoError(t, n1.WaitForInitialCreate(ctx))
	old := n1.ActualPath()
	// Client a hears of the deletion only once b made its node, with a1's old name: its
	// replies are held meanwhile (a moment, well within its session).
	w.e.proxy.StallToClients()
	w.remake(dir)
	nb, n2 := mk(w.b, "b"), mk(w.a, "a2")
	defer nb.Close()
	defer n2.Close()
	require.NoError(t, nb.Start())
	require.NoError(t, nb.WaitForInitialCreate(ctx))
	w.e.proxy.Heal()
	require.Equal(t, old, nb.ActualPath(), "b's node has a1's old name")
	require.NoError(t, n2.Start())
	require.NoError(t, n2.WaitForInitialCreate(ctx))
	// a1 is back with a node of its own: three nodes, each holding its owner's data.
	var last map[string]int64
	deadline := time.Now().Add(30 * time.Second)
	for last = w.tree(dir); len(last) != 3; last = w.tree(dir) {
		if time.Now().After(deadline) {
			for p := range last {
				data, st, _ := w.admin.GetData(ctx, p)
				t.Logf("node %s: data %q, owner 0x%x (a: 0x%x, b: 0x%x)", p, data, st.EphemeralOwner, w.a.SessionID(), w.b.SessionID())
			}
			t.Logf("a1: %q, a2: %q, b: %q", n1.ActualPath(), n2.ActualPath(), nb.ActualPath())
			t.Fatalf("not three member nodes: %v", last)
		}
		time.Sleep(20 * time.Millisecond)
	}
	byData := map[string]string{}
	for p := range w.tree(dir) {
		data, _, err := w.admin.GetData(ctx, p)
		require.NoError(t, err)
		byData[string(data)] = p
	}
	t.Logf("a1's old node %s; now %v", old, byData)
	for id, n := range map[string]*persistentnode.Node{"a1": n1, "a2": n2, "b": nb} {
		w.waitFor(id+"'s ActualPath is its node", func() bool { return n.ActualPath() == byData[id] })
		w.claim(id, n.ActualPath())
	}
	for id, n := range map[string]*persistentnode.Node{"a1": n1, "a2": n2, "b": nb} {
		p := n.ActualPath()
		require.NoError(t, n.Close())
		w.led.releasePath(id, p)
		w.survivors(id+" closed", dir)
	}
}

// memberTwo: two members of the same id on one client: closing the second leaves the
// first in the group.
func memberTwo(w *famWorld) {
	t, ctx := w.t, w.ctx
	group := w.e.base + "/group"
	m1, err := groupmember.New(w.a, group, "x", []byte("a1"))
	require.NoError(t, err)
	defer m1.Close()
	require.NoError(t, m1.Start(ctx))
	require.NoError(t, m1.WaitForInitialCreate(ctx))
	w.claim("a1", group+"/x")
	m2, err := groupmember.New(w.a, group, "x", []byte("a2"))
	require.NoError(t, err)
	defer m2.Close()
	require.NoError(t, m2.Start(ctx))
	require.NoError(t, m2.WaitForInitialCreate(ctx))
	w.settle(group)
	require.NoError(t, m2.Close())
	w.survivors("a2 closed", group)
	w.settle(group)
	cur, err := m1.CurrentMembers()
	require.NoError(t, err)
	assert.Contains(t, cur, "x", "a1 left the group with a2")
	require.NoError(t, m1.Close())
	w.led.releasePath("a1", group+"/x")
}

// memberReuse: a1 (id x) and b (id y) are members; the admin deletes the group and makes
// it again; a2 (client a, id z) joins. Each is back with its own node; a1's Close
// deletes only x.
func memberReuse(w *famWorld) {
	t, ctx := w.t, w.ctx
	group := w.e.base + "/group"
	mk := func(c *framework.Client, id, data string) *groupmember.Member {
		m, err := groupmember.New(c, group, id, []byte(data))
		require.NoError(t, err)
		require.NoError(t, m.Start(ctx))
		require.NoError(t, m.WaitForInitialCreate(ctx))
		return m
	}
	m1 := mk(w.a, "x", "a1")
	defer m1.Close()
	mb := mk(w.b, "y", "b")
	defer mb.Close()
	w.remake(group)
	m2 := mk(w.a, "z", "a2")
	defer m2.Close()
	w.waitFor("x, y and z in the group again", func() bool { return len(w.tree(group)) == 3 })
	for id, who := range map[string]string{"x": "a1", "y": "b", "z": "a2"} {
		w.claim(who, group+"/"+id)
	}
	for _, x := range []struct {
		m       *groupmember.Member
		who, id string
	}{{m1, "a1", "x"}, {mb, "b", "y"}, {m2, "a2", "z"}} {
		require.NoError(t, x.m.Close())
		w.led.releasePath(x.who, group+"/"+x.id)
		w.survivors(x.who+" closed", group)
	}
}

// discoveryTwo: two registries on one client register the same id: the second's node
// replaces the first's (Register's doc); the first's Close leaves the second's node.
func discoveryTwo(w *famWorld) {
	t, ctx := w.t, w.ctx
	base := w.e.base + "/disc"
	d1, err := discovery.New[string](w.a, base)
	require.NoError(t, err)
	defer d1.Close()
	d2, err := discovery.New[string](w.a, base)
	require.NoError(t, err)
	defer d2.Close()
	i1, err := discovery.NewInstance("svc", "a1", discovery.WithID("i"))
	require.NoError(t, err)
	i2, err := discovery.NewInstance("svc", "a2", discovery.WithID("i"))
	require.NoError(t, err)
	path := base + "/svc/i"
	require.NoError(t, d1.Register(ctx, i1))
	first := w.claim("a1", path)
	require.NoError(t, d2.Register(ctx, i2))
	w.led.dropped(first) // replaced, as documented
	w.claim("a2", path)
	require.NoError(t, d1.Close())
	w.survivors("a1 closed", base)
	got, err := d2.QueryForInstance(ctx, "svc", "i")
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, "a2", got.Payload)
	require.NoError(t, d2.Close())
	w.led.releasePath("a2", path)
}

// discoveryReuse: a1 registers i; the admin deletes the service's nodes and parent and
// makes it again; b registers j and a2 (client a) k there. a1's registration is back;
// closing a1 deletes only i.
func discoveryReuse(w *famWorld) {
	t, ctx := w.t, w.ctx
	base := w.e.base + "/disc"
	reg := func(c *framework.Client, id string) *discovery.ServiceDiscovery[string] {
		d, err := discovery.New[string](c, base)
		require.NoError(t, err)
		inst, err := discovery.NewInstance("svc", id, discovery.WithID(id))
		require.NoError(t, err)
		require.NoError(t, d.Register(ctx, inst))
		return d
	}
	d1 := reg(w.a, "i")
	defer d1.Close()
	w.remake(base + "/svc")
	db := reg(w.b, "j")
	defer db.Close()
	d2 := reg(w.a, "k")
	defer d2.Close()
	w.waitFor("i, j and k registered", func() bool { return len(w.tree(base)) == 3 })
	for id, who := range map[string]string{"i": "a1", "j": "b", "k": "a2"} {
		w.claim(who, base+"/svc/"+id)
	}
	for _, x := range []struct {
		d       *discovery.ServiceDiscovery[string]
		who, id string
	}{{d1, "a1", "i"}, {db, "b", "j"}, {d2, "a2", "k"}} {
		require.NoError(t, x.d.Close())
		w.led.releasePath(x.who, base+"/svc/"+x.id)
		w.survivors(x.who+" closed", base)
	}
}

// rmdirs deletes directories the scenario made that nobody reaps (persistent parents),
// when they are empty; one that is not is left for finish to report.
func (w *famWorld) rmdirs(paths ...string) {
	for _, p := range paths {
		err := w.admin.Delete(w.ctx, p, framework.Quietly())
		if err != nil && !errors.Is(err, framework.ErrNotEmpty) {
			require.NoError(w.t, err)
		}
	}
}

// deliveries is the conservation checker of the consumers: each item delivered once.
type deliveries struct {
	mu  sync.Mutex
	got map[string][]string // item -> consumers
}

func (d *deliveries) add(item, by string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.got == nil {
		d.got = map[string][]string{}
	}
	d.got[item] = append(d.got[item], by)
}

// problems lists items delivered other than once, of want.
func (d *deliveries) problems(want []string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, it := range want {
		if n := len(d.got[it]); n != 1 {
			out = append(out, fmt.Sprintf("item %s delivered %d times (%v)", it, n, d.got[it]))
		}
	}
	for it := range d.got {
		if !slices.Contains(want, it) {
			out = append(out, fmt.Sprintf("item %s delivered, never put", it))
		}
	}
	return out
}

func (w *famWorld) checkDeliveries(d *deliveries, want []string) {
	probs := d.problems(want)
	for _, p := range probs {
		w.t.Error("conservation: " + p)
	}
	count(w.t, "conservation", checkCount{ops: len(want), violations: len(probs)})
}

func famItems(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("item-%02d", i))
	}
	return out
}

// simpleQueueTwo: two SimpleQueues on one client take from one queue together: each
// item once.
func simpleQueueTwo(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/sq"
	items := famItems(10)
	put, err := queue.NewSimple[string](w.b, path, queue.String{})
	require.NoError(t, err)
	for _, it := range items {
		_, err := put.Offer(ctx, it)
		require.NoError(t, err)
	}
	var d deliveries
	var wg sync.WaitGroup
	left := make(chan struct{}, len(items))
	for range items {
		left <- struct{}{}
	}
	close(left)
	for _, id := range []string{"a1", "a2"} {
		q, err := queue.NewSimple[string](w.a, path, queue.String{})
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range left {
				it, err := q.Take(ctx)
				if err != nil {
					d.add("error: "+err.Error(), id)
					continue
				}
				d.add(it, id)
			}
		}()
	}
	wg.Wait()
	w.checkDeliveries(&d, items)
	w.rmdirs(path)
}

// reusedItem checks a take that met a reused name: the admin made the queue path again
// between the take's read and its delete, and b put "new" there under the old item's
// name. Either the take delivered "old" and "new" is still queued, or the take said the
// item may be gone (ErrMaybeGone); never "new" delivered as "old" nor lost without an
// error.
func (w *famWorld) reusedItem(path string, got string, err error, items func() []string) {
	t := w.t
	assert.NotEqual(t, "new", got, "the take delivered the new item in place of the old")
	left := items()
	if err != nil {
		assert.ErrorIs(t, err, queue.ErrMaybeGone, "the take's error")
		return
	}
	assert.Equal(t, "old", got)
	assert.Len(t, left, 1, "the new item at the old item's name is gone, and the take said nothing")
}

// simpleQueueReuse: a take reads the head (old), and before its delete goes out the
// admin makes the queue path again and b offers "new", which gets the old item's name.
func simpleQueueReuse(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/sq"
	c, arm := w.hooked("delete")
	put, err := queue.NewSimple[string](w.b, path, queue.String{})
	require.NoError(t, err)
	_, err = put.Offer(ctx, "old")
	require.NoError(t, err)
	q, err := queue.NewSimple[string](c, path, queue.String{})
	require.NoError(t, err)
	arm(func() {
		w.remake(path)
		_, err := put.Offer(ctx, "new")
		require.NoError(t, err)
	})
	got, err := q.Take(ctx)
	w.reusedItem(path, got, err, func() []string { l, _ := put.Items(ctx); return l })
	// Drain what is left, as a later consumer would.
	for {
		if l, _ := put.Items(ctx); len(l) == 0 {
			break
		}
		_, err := q.Take(ctx)
		require.NoError(t, err)
	}
	w.rmdirs(path)
	require.NoError(t, c.Close())
}

// queueTwo: two Queues on one client consume one queue together (with and without a
// lock path): each item once.
func queueTwo(lockPath bool) func(w *famWorld) {
	return func(w *famWorld) {
		t, ctx := w.t, w.ctx
		path, locks := w.e.base+"/q", w.e.base+"/qlocks"
		var opts []queue.Option
		if lockPath {
			opts = append(opts, queue.WithLockPath(locks))
		}
		items := famItems(10)
		put, err := queue.New[string](w.b, path, queue.String{}, opts...)
		require.NoError(t, err)
		for _, it := range items {
			_, err := put.Put(ctx, it)
			require.NoError(t, err)
		}
		var d deliveries
		var mu sync.Mutex
		n := 0
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var wg sync.WaitGroup
		for _, id := range []string{"a1", "a2"} {
			q, err := queue.New[string](w.a, path, queue.String{}, opts...)
			require.NoError(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = q.Consume(cctx, func(_ context.Context, it string) error {
					d.add(it, id)
					mu.Lock()
					defer mu.Unlock()
					if n++; n == len(items) {
						cancel()
					}
					return nil
				})
			}()
		}
		wg.Wait()
		require.NoError(t, ctx.Err())
		w.checkDeliveries(&d, items)
		w.rmdirs(path, locks)
	}
}

// queueReuse: with a lock path, the handler of "old" runs while the admin makes the
// queue path again and b puts "new" under the old item's name; without one, that
// happens between the take's read and its delete. The removal never takes "new"
// silently.
func queueReuse(lockPath bool) func(w *famWorld) {
	return func(w *famWorld) {
		t, ctx := w.t, w.ctx
		path, locks := w.e.base+"/q", w.e.base+"/qlocks"
		var opts []queue.Option
		if lockPath {
			opts = append(opts, queue.WithLockPath(locks))
		}
		c, arm := w.hooked("delete")
		put, err := queue.New[string](w.b, path, queue.String{}, opts...)
		require.NoError(t, err)
		_, err = put.Put(ctx, "old")
		require.NoError(t, err)
		q, err := queue.New[string](c, path, queue.String{}, opts...)
		require.NoError(t, err)
		reuse := func() {
			w.remake(path)
			_, err := put.Put(ctx, "new")
			require.NoError(t, err)
		}
		if !lockPath {
			arm(reuse)
		}
		var got string
		err = q.ConsumeOne(ctx, func(_ context.Context, it string) error {
			got = it
			if lockPath {
				reuse()
			}
			return nil
		})
		w.reusedItem(path, got, err, func() []string { l, _ := put.Items(ctx); return l })
		for {
			if l, _ := put.Items(ctx); len(l) == 0 {
				break
			}
			require.NoError(t, q.ConsumeOne(ctx, func(context.Context, string) error { return nil }))
		}
		w.rmdirs(path, locks)
		require.NoError(t, c.Close())
	}
}

// countTwo: two Counts on one client: a TrySet on a stale read of one fails after the
// other set the count.
func countTwo(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/count"
	c1, err := sharedcount.New(w.a, path, 0)
	require.NoError(t, err)
	defer c1.Close()
	c2, err := sharedcount.New(w.a, path, 0)
	require.NoError(t, err)
	defer c2.Close()
	require.NoError(t, c1.Start(ctx))
	require.NoError(t, c2.Start(ctx))
	prev, err := c1.Get()
	require.NoError(t, err)
	require.NoError(t, c2.Set(ctx, 5))
	assert.ErrorIs(t, c1.TrySet(ctx, prev, 7), sharedcount.ErrConflict)
	data, _, err := w.admin.GetData(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, sharedcount.Encode(5), data)
	require.NoError(t, c1.Close())
	require.NoError(t, c2.Close())
	w.rmdirs(path)
}

// countReuse: a1 read the count; the admin deletes it and its parent and b's Count makes
// it again (version 0 again); a1's TrySet on its read must not succeed.
func countReuse(w *famWorld) {
	t, ctx := w.t, w.ctx
	dir := w.e.base + "/count"
	path := dir + "/c"
	c1, err := sharedcount.New(w.a, path, 3)
	require.NoError(t, err)
	defer c1.Close()
	require.NoError(t, c1.Start(ctx))
	prev, err := c1.Get()
	require.NoError(t, err)
	w.remake(dir)
	cb, err := sharedcount.New(w.b, path, 3)
	require.NoError(t, err)
	defer cb.Close()
	require.NoError(t, cb.Start(ctx))
	tsErr := c1.TrySet(ctx, prev, 9)
	assert.Error(t, tsErr, "a TrySet on a node deleted and made again since its read succeeded")
	data, _, err := w.admin.GetData(ctx, path)
	require.NoError(t, err)
	if !errors.Is(tsErr, sharedcount.ErrNodeReplaced) {
		assert.Equal(t, sharedcount.Encode(3), data, "b's count was overwritten")
	}
	require.NoError(t, c1.Close())
	require.NoError(t, cb.Close())
	w.rmdirs(path, dir)
}

// atomicTwo: two counters on one client increment together: every result distinct, the
// total the sum.
func atomicTwo(w *famWorld) {
	t, ctx := w.t, w.ctx
	path := w.e.base + "/atomic"
	var mu sync.Mutex
	seen := map[int64]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for _, id := range []string{"a1", "a2"} {
		n, err := zatomic.NewLong(w.a, path)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				r, err := n.Increment(ctx)
				if err != nil || !r.Succeeded {
					errs <- fmt.Errorf("%s: %+v %v", id, r, err)
					continue
				}
				mu.Lock()
				if o, ok := seen[r.Post]; ok {
					errs <- fmt.Errorf("%s and %s both got %d", o, id, r.Post)
				}
				seen[r.Post] = id
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n, err := zatomic.NewLong(w.admin, path)
	require.NoError(t, err)
	r, err := n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(20), r.Post)
	w.rmdirs(path)
}

// atomicReuse: an increment reads 5, and before its write goes out the admin deletes the
// counter and its parent and b makes it again at 0: the increment must not report a
// result the server never gave.
func atomicReuse(w *famWorld) {
	t, ctx := w.t, w.ctx
	dir := w.e.base + "/atomic"
	path := dir + "/n"
	c, arm := w.hooked("setData")
	n, err := zatomic.NewLong(c, path)
	require.NoError(t, err)
	ok, err := n.Initialize(ctx, 5)
	require.NoError(t, err)
	require.True(t, ok)
	nb, err := zatomic.NewLong(w.b, path)
	require.NoError(t, err)
	arm(func() {
		w.remake(dir)
		ok, err := nb.Initialize(ctx, 0)
		require.NoError(t, err)
		require.True(t, ok)
	})
	r, err := n.Increment(ctx)
	if err == nil {
		assert.False(t, r.Succeeded && r.Pre == 5, "the increment reports %+v, a result the server never gave", r)
	} else {
		assert.ErrorIs(t, err, zatomic.ErrUnknownOutcome)
	}
	require.NoError(t, c.Close())
	w.rmdirs(path, dir)
}

// TestFamilyCheckersNegativeControl: the family's checkers report what they must. The
// ownership ledger, fed violating records: a node claimed by two instances; an instance
// giving up a node it does not hold; a holder's node gone or replaced under it; a claim
// never given up and a node left at the end. Then, against ZooKeeper, a broken "instance"
// that deletes by name (another instance's node at that name, made again at a reused
// name) is caught by the survivors check. The deliveries checker: an item delivered twice,
// one never delivered, one delivered that was never put.
func TestFamilyCheckersNegativeControl(t *testing.T) {
	t.Run("ledger-records", func(t *testing.T) {
		n1, n2 := nodeID{"/x/n-0000000000", 10}, nodeID{"/x/n-0000000001", 11}
		cases := []struct {
			name string
			feed func(l *ownLedger)
			want string
		}{
			{"two-owners", func(l *ownLedger) { l.claim("a1", n1); l.claim("a2", n1) }, "owned by two instances"},
			{"give-up-another's", func(l *ownLedger) { l.claim("a1", n1); l.release("a2", n1) }, "which it does not hold"},
			{"deleted-under-holder", func(l *ownLedger) {
				l.claim("a1", n1)
				l.survivors("check", map[string]int64{})
			}, "deleted by someone else"},
			{"replaced-under-holder", func(l *ownLedger) {
				l.claim("a1", n1)
				l.survivors("check", map[string]int64{n1.path: 99})
			}, "was replaced"},
			{"claim-left", func(l *ownLedger) { l.claim("a1", n1); l.finish(nil) }, "still holds"},
			{"node-left", func(l *ownLedger) { l.finish(map[string]int64{n2.path: n2.czxid}) }, "is left"},
		}
		for _, c := range cases {
			l := newOwnLedger()
			c.feed(l)
			p := l.report()
			if assert.Len(t, p, 1, c.name) {
				assert.Contains(t, p[0], c.want, c.name)
			}
		}
		// The same records without the violation: nothing reported.
		l := newOwnLedger()
		l.claim("a1", n1)
		l.claim("a2", n2)
		l.survivors("check", map[string]int64{n1.path: n1.czxid, n2.path: n2.czxid})
		l.release("a1", n1)
		l.dropped(n2)
		l.finish(nil)
		assert.Empty(t, l.report())
	})
	t.Run("ledger-live", func(t *testing.T) {
		w := newFamWorld(t)
		ctx := w.ctx
		dir := w.e.base + "/control"
		// a1's node, then the parent made again and b's node at the same name.
		mk := func(c *framework.Client) string {
			p, err := c.Create(ctx, dir+"/n-", nil, framework.WithMode(framework.EphemeralSequential), framework.WithContainerParents())
			require.NoError(t, err)
			return p
		}
		old := mk(w.a)
		w.remake(dir)
		nb := mk(w.b)
		require.Equal(t, old, nb, "the sequence restarts: b's node has a1's old name")
		w.claim("b", nb)
		// A broken a1 releases by name: b's node goes.
		require.NoError(t, w.a.Delete(ctx, old))
		w.survivors("a1's release by name", dir)
		p := w.led.report()
		if assert.Len(t, p, 1) {
			assert.Contains(t, p[0], "b's node")
			assert.Contains(t, p[0], "deleted by someone else")
		}
	})
	t.Run("deliveries", func(t *testing.T) {
		var d deliveries
		d.add("i1", "a1")
		d.add("i1", "a2")
		d.add("i3", "a1")
		p := d.problems([]string{"i1", "i2"})
		assert.ElementsMatch(t, []string{
			"item i1 delivered 2 times ([a1 a2])",
			"item i2 delivered 0 times ([])",
			"item i3 delivered, never put",
		}, p)
		var ok deliveries
		ok.add("i1", "a1")
		ok.add("i2", "a2")
		assert.Empty(t, ok.problems([]string{"i1", "i2"}))
	})
}
