// Package locks holds the lock internals shared by the mutex, the read-write lock and the
// semaphore's inner mutex (Curator's LockInternals): a protected ephemeral-sequential
// node per contender, children sorted by sequence, a predicate deciding who holds, and a
// data watch on one node ahead so that a release wakes a single waiter.
package locks

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

// Errors of the lock internals; the recipes wrap or re-export them.
var (
	// ErrLocked is returned by a try-acquire when the lock is held by someone else.
	ErrLocked = sentinel.New("lock held by another", framework.ErrLocked)
	// ErrNodeLost is returned when our lock node vanished while we waited (our session
	// was lost) more often than the retry policy allows.
	ErrNodeLost = sentinel.New("lock node vanished while waiting", framework.ErrLost)
)

// cleanupTimeout bounds the deletes done after a failure, on a context detached from the
// caller's.
const cleanupTimeout = 10 * time.Second

// CancelGrace is how long a clean-up is waited for once the caller's context has ended,
// before it is left to the background: a round trip or two on a live connection, short
// enough that a caller on a stalled one still returns promptly.
const CancelGrace = time.Second

// Predicate decides, from the sorted children, whether ours (at index ours) holds the
// lock, and if not which child to watch. It is Curator's LockInternalsDriver.getsTheLock.
type Predicate func(sorted []string, ours int, maxLeases int) (holds bool, watch string, err error)

// StandardPredicate holds when fewer than maxLeases children precede ours, and otherwise
// watches the child maxLeases places ahead.
func StandardPredicate(sorted []string, ours int, maxLeases int) (bool, string, error) {
	if ours < maxLeases {
		return true, "", nil
	}
	return false, sorted[ours-maxLeases], nil
}

// Config describes one lock.
type Config struct {
	Client    *framework.Client
	Path      string // the lock's parent node
	LockName  string // the marker in node names, e.g. "lock-"
	MaxLeases int    // 1 for a mutex
	Data      []byte // node data; nil means DefaultNodeData (Curator's default)
	Predicate Predicate
	// SortKey returns the key children are sorted by; the default is the text after the
	// last LockName (framework.SequenceSuffix).
	SortKey func(name string) string
	// Contender reports whether a child of the lock's parent is a lock node at all; the
	// default: its name carries LockName. Any other child (an operator's note, another
	// recipe's node) is ignored by the predicate, the waiting and Participants alike:
	// it neither holds the lock nor queues for it.
	Contender func(name string) bool
	// FastHandoff lets a waiter whose watched node was first in line take the lock as soon
	// as that node is deleted, without listing the children again: one request and one
	// round trip less per hand-over. It is right only when every node sorts by its own
	// sequence number (no node can later appear ahead of ours), so only for the standard
	// predicate with one lease and the default sort key.
	FastHandoff bool
	// Unobserved keeps this lock's waits from the client's lock observer: the
	// semaphore's inner lock, whose semaphore reports its own.
	Unobserved bool
	// NoLease: the nodes are never held through a Lease (the semaphore's inner lock,
	// released by Release): no children watch is set for one (Held.watch).
	NoLease bool
}

// Internals runs the lock algorithm for one Config. It holds no per-acquisition state
// and is safe for concurrent use.
type Internals struct {
	cfg Config
	// alone: the last listing of an acquisition through these internals showed no other
	// contender; the next acquisition's listing (sent behind its create) then also sets a
	// children watch, for the lease (see Held). Not at the first acquisition: a queue
	// forming of first acquisitions would each leave a watch (and the client a goroutine
	// following it) until the next change of the children.
	alone atomic.Bool
}

// New checks cfg and returns the internals for it.
func New(cfg Config) (*Internals, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: nil client", framework.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(cfg.Path); err != nil {
		return nil, err
	}
	if cfg.Path == "/" || framework.IsReservedPath(cfg.Path) {
		return nil, fmt.Errorf("%w: %q cannot be a lock path (the root and /zookeeper are ZooKeeper's)", framework.ErrInvalidArgument, cfg.Path)
	}
	if cfg.LockName == "" || cfg.MaxLeases < 1 {
		return nil, fmt.Errorf("%w: lock name %q, max leases %d", framework.ErrInvalidArgument, cfg.LockName, cfg.MaxLeases)
	}
	if err := cfg.Client.CheckDataSize(framework.JoinPath(cfg.Path, cfg.LockName), len(cfg.Data)); err != nil {
		return nil, fmt.Errorf("node data: %w", err)
	}
	if cfg.FastHandoff && (cfg.Predicate != nil || cfg.SortKey != nil || cfg.MaxLeases != 1) {
		return nil, fmt.Errorf("%w: fast hand-off needs the standard predicate, sort and one lease", framework.ErrInvalidArgument)
	}
	if cfg.Predicate == nil {
		cfg.Predicate = StandardPredicate
	}
	if cfg.SortKey == nil {
		name := cfg.LockName
		cfg.SortKey = func(s string) string { return framework.SequenceSuffix(s, name) }
	}
	if cfg.Contender == nil {
		name := cfg.LockName
		cfg.Contender = func(s string) bool { return strings.Contains(s, name) }
	}
	return &Internals{cfg: cfg}, nil
}

// contenders returns the lock nodes among children (Config.Contender), in their order;
// children itself when all are.
func (l *Internals) contenders(children []string) []string {
	if !slices.ContainsFunc(children, func(k string) bool { return !l.cfg.Contender(k) }) {
		return children
	}
	return slices.DeleteFunc(slices.Clone(children), func(k string) bool { return !l.cfg.Contender(k) })
}

// Held describes a lock node that holds the lock.
type Held struct {
	Path      string // the node's path (without namespace)
	Gen       uint64 // the client's session generation it was taken in
	SessionID int64  // the session that owns it
	Behind    int    // lock nodes behind ours at the listing that gave us the lock
	// czxid caches the node's czxid once read (shared by copies of the Held, e.g. a
	// node handed over); 0 until then. Reading it costs one request, so it is read
	// only when a fencing token is asked for.
	czxid *atomic.Int64
	// watch, when not nil, is a children watch on the node's parent set by a listing
	// that showed the node (the one that gave the lock): until it fires, nobody deleted
	// the node. NewLease takes it (and clears it) instead of reading the node again.
	watch *framework.Watch
	// revokeHeard is the mzxid of the last revocation request a lease on the node heard,
	// for a lease that takes the node over (Lease.HandOver); 0: none.
	revokeHeard int64
}

// WithWatch sets h's children watch (see Held.watch): w must be a children watch on
// the parent of h's node, set by a listing that showed the node. It returns h.
func (h *Held) WithWatch(w *framework.Watch) *Held {
	h.watch = w
	return h
}

// NewHeld describes a node held in generation gen by session sid.
func NewHeld(path string, gen uint64, sid int64, behind int) *Held {
	return &Held{Path: path, Gen: gen, SessionID: sid, Behind: behind, czxid: new(atomic.Int64)}
}

// Czxid returns the node's czxid, the base of fencing tokens, reading it (one request)
// the first time. It fails with ErrLeaseLost when the node is gone or belongs to another
// session.
func (h *Held) Czxid(ctx context.Context, c *framework.Client) (int64, error) {
	if z := h.czxid.Load(); z != 0 {
		return z, nil
	}
	st, err := c.Exists(ctx, h.Path)
	if err != nil {
		return 0, err
	}
	if st == nil || st.EphemeralOwner != h.SessionID {
		return 0, fmt.Errorf("%w: %s", ErrLeaseLost, h.Path)
	}
	h.czxid.Store(st.Czxid)
	return st.Czxid, nil
}

// Sorted returns the children names sorted by the lock's sort key, names with equal keys
// by name. Each key is computed once (not at every comparison): a queue of n waiters is
// listed and sorted at every hand-over.
func (l *Internals) Sorted(children []string) []string {
	type keyed struct{ key, name string }
	ks := make([]keyed, len(children))
	for i, c := range children {
		ks[i] = keyed{l.cfg.SortKey(c), c}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, len(ks))
	for i := range ks {
		out[i] = ks[i].name
	}
	return out
}

// Participants returns the paths of the lock nodes in lock order (the holder first);
// children that are no lock nodes (Config.Contender) are left out.
func (l *Internals) Participants(ctx context.Context) ([]string, error) {
	kids, _, err := l.cfg.Client.Children(ctx, l.cfg.Path)
	if errors.Is(err, framework.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range l.Sorted(l.contenders(kids)) {
		out = append(out, framework.JoinPath(l.cfg.Path, k))
	}
	return out, nil
}

// Acquire creates a lock node and waits until it holds the lock, ctx ends, or (try) at
// once when it does not. On any failure the node is deleted (guaranteed) before it
// returns.
func (l *Internals) Acquire(ctx context.Context, try bool) (*Held, error) {
	return l.AcquireWith(ctx, try, l.cfg.Data)
}

// AcquireWith is Acquire with node data given per call.
func (l *Internals) AcquireWith(ctx context.Context, try bool, data []byte) (*Held, error) {
	return l.AcquireSpec(ctx, try, Spec{Data: data, Name: l.cfg.LockName, Sequential: true})
}

// Spec says how one acquisition makes its node and decides, where it differs from the
// Config: the read-write lock's downgrade creates a plain node named after the writer's
// sequence number, holds only while that writer's node is there, and is not retried.
type Spec struct {
	Data       []byte    // nil: the Config's
	Name       string    // the node's name after the protected prefix
	Sequential bool      // a sequence number is appended
	Predicate  Predicate // nil: the Config's
	Gen        uint64    // not 0: the acquisition must happen in this session generation
	NoRetry    bool      // a vanished node fails the acquisition instead of starting over
}

// AcquireSpec is Acquire as spec says.
func (l *Internals) AcquireSpec(ctx context.Context, try bool, spec Spec) (_ *Held, err error) {
	c := l.cfg.Client
	if spec.Data == nil {
		spec.Data = l.cfg.Data
	}
	if spec.Data == nil {
		spec.Data = DefaultNodeData() // at acquisition: it may have been found since New
	}
	start := time.Now()
	defer func() { l.observeWait(start, err) }()
	for retries := 0; ; retries++ {
		h, err := l.attempt(ctx, try, spec)
		if !errors.Is(err, ErrNodeLost) || spec.NoRetry {
			return h, err
		}
		// Our node vanished: our session was lost while we waited. Start over if the
		// retry policy allows, after the sleep it asks for.
		c.Logger().Info("lock node vanished while waiting; starting over", "component", "locks", "path", l.cfg.Path, "retry", retries)
		sleep, ok := c.RetryPolicy().AllowRetry(retries, time.Since(start))
		if !ok {
			return nil, err
		}
		if err := sleepCtx(ctx, c, sleep); err != nil {
			return nil, err
		}
	}
}

// sleepCtx sleeps for d, or less when ctx ends or the client closes (then an error).
func sleepCtx(ctx context.Context, c *framework.Client, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.Done():
		return framework.ErrClosed
	}
}

// SleepBeforeRetry is sleepCtx for recipes that retry whole steps.
func SleepBeforeRetry(ctx context.Context, c *framework.Client, d time.Duration) error {
	return sleepCtx(ctx, c, d)
}

func (l *Internals) attempt(ctx context.Context, try bool, spec Spec) (*Held, error) {
	c := l.cfg.Client
	gen := c.Generation()
	if spec.Gen != 0 && gen != spec.Gen {
		return nil, fmt.Errorf("%w: the session changed", ErrLeaseLost)
	}
	// When the last listing showed nobody else, this one most likely gives the lock: it
	// also sets a children watch, which the lease takes over (Held.watch), so that the
	// lease need not read its node (a round trip) before a release can trust its delete.
	// A contender ahead (the hint was wrong) leaves that watch unused; it fires at the
	// next change of the children, which the wait waits for anyway.
	node, first, err := CreateAndListW(ctx, c, l.cfg.Path, spec.Name, spec.Data, spec.Sequential, !l.cfg.NoLease && l.alone.Load())
	if err != nil {
		// A refused create (NoAuth, a quota) may leave the listing's children watch set
		// (no watch can be removed): the next attempt sets none, so refusals in a row
		// leave one at most.
		l.alone.Store(false)
		return nil, err
	}
	// The session the node was made in: a failed acquisition deletes it only while that
	// session owns it (when the create went out on an older session too, its node, if
	// it is that one's, goes with it).
	owner := c.SessionID()
	name := framework.NodeName(node)
	pred := spec.Predicate
	if pred == nil {
		pred = l.cfg.Predicate
	}
	h, err := l.wait(ctx, try, node, name, gen, first, pred, spec.Predicate == nil)
	if err != nil {
		l.deleteNode(ctx, node, owner)
		return nil, err
	}
	return h, nil
}

// CreateAndList creates a protected ephemeral (sequential, or not) node named name under
// parent, with its missing parents, and sends a listing of parent's children right behind
// the create, without waiting for its reply: ZooKeeper answers one session's requests in
// order, so a listing sent after the create sees the new node, and the caller saves a
// round trip. The listing is started when the create is being handed to the connection
// (framework.WithOnSend); should it still overtake the create, first reports nothing and
// the caller lists again, concluding nothing from it. first must be called once.
func CreateAndList(ctx context.Context, c *framework.Client, parent, name string, data []byte, sequential bool) (node string, first func() []string, err error) {
	node, firstW, err := CreateAndListW(ctx, c, parent, name, data, sequential, false)
	if err != nil {
		return "", nil, err
	}
	return node, func() []string { kids, _ := firstW(); return kids }, nil
}

// CreateAndListW is CreateAndList whose listing, when watch is set, also sets a children
// watch on parent (ChildrenW): first then returns it with the listing, so that a caller
// that must wait for a change of the children needs no second listing. The watch is nil
// when the listing is not usable. A create that fails after the listing was sent (refused
// for the ACL or a quota) leaves that children watch set on parent, until its children
// change or the session ends: go-zookeeper v1.0.4 cannot remove a watch.
func CreateAndListW(ctx context.Context, c *framework.Client, parent, name string, data []byte, sequential, watch bool) (node string, first func() ([]string, *framework.Watch), err error) {
	mode := framework.Ephemeral
	if sequential {
		mode = framework.EphemeralSequential
	}
	// The listing starts from the create's send hook, on the create's request goroutine;
	// once the create returned (or was given up), no listing starts any more.
	l := &pipelinedListing{done: make(chan struct{})}
	node, err = c.Create(ctx, framework.JoinPath(parent, name), data,
		framework.WithMode(mode), framework.WithProtection(), framework.WithContainerParents(),
		framework.WithOnSend(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.over || l.started {
				return // a resend (after creating the parents, or a retry): listed already
			}
			l.started = true
			go l.list(ctx, c, parent, watch)
		}))
	l.mu.Lock()
	l.over = true
	started := l.started
	l.mu.Unlock()
	if err != nil {
		if started {
			<-l.done // the listing's request ends with ctx or the client: wait for it
		}
		if errors.Is(err, framework.ErrClosed) {
			// The node was never created: name no path (the caller names the lock's).
			return "", nil, framework.ErrClosed
		}
		return "", nil, err
	}
	ours := framework.NodeName(node)
	return node, func() ([]string, *framework.Watch) {
		if !started {
			return nil, nil // done before we could pipeline: the caller lists
		}
		<-l.done
		if l.err != nil || !slices.Contains(l.kids, ours) {
			return nil, nil
		}
		return l.kids, l.w
	}, nil
}

// pipelinedListing is the listing CreateAndListW sends behind its create.
type pipelinedListing struct {
	mu      sync.Mutex
	over    bool // the create returned: too late to start the listing
	started bool
	done    chan struct{} // closed when kids, w and err are set
	kids    []string
	w       *framework.Watch
	err     error
}

func (l *pipelinedListing) list(ctx context.Context, c *framework.Client, parent string, watch bool) {
	defer close(l.done)
	if watch {
		l.kids, _, l.w, l.err = c.ChildrenW(ctx, parent)
	} else {
		l.kids, _, l.err = c.Children(ctx, parent)
	}
}

// wait is Curator's internalLockLoop for our node. first, when not nil, gives the
// listing sent right behind our create (nil when it cannot be used). standard: pred is
// the Config's (with FastHandoff, the standard predicate).
func (l *Internals) wait(ctx context.Context, try bool, node, name string, gen uint64, first func() ([]string, *framework.Watch), pred Predicate, standard bool) (*Held, error) {
	c := l.cfg.Client
	handedOff := false // our predecessor was first in line and is gone
	// waited: we waited for a watch since the last read. The server may lag (a follower
	// cut off from its peers answers from its old state, its events included): the read
	// that may grant the lock then comes after a sync, so that it sees every write
	// committed before (our node deleted by someone else, say). Not before the first
	// read: it follows our own create, and shows the lock as of that write.
	waited := false
	behind := 0
	for {
		var sorted []string
		var ours int
		var holds bool
		var watch string
		var early *framework.Watch // the children watch of the listing sent behind the create
		if waited {
			if err := c.Sync(ctx, l.cfg.Path); err != nil {
				return nil, err
			}
			waited = false
		}
		if handedOff {
			// The node ahead is gone, but so may ours be (deleted by someone else, as
			// Curator's re-listing would see): only our node, still there, holds.
			st, err := c.Exists(ctx, node)
			if err != nil {
				return nil, err
			}
			if st == nil {
				return nil, ErrNodeLost
			}
			holds = true
		} else {
			var kids []string
			if first != nil {
				kids, early = first()
				first = nil
			}
			if kids == nil {
				var err error
				if kids, _, err = c.Children(ctx, l.cfg.Path); errors.Is(err, framework.ErrNoNode) {
					// The parent is gone, and our node with it (deleted, perhaps made
					// again): as when our node is missing from the list.
					return nil, ErrNodeLost
				} else if err != nil {
					return nil, err
				}
			}
			// Only lock nodes count: a child without the lock name neither holds nor
			// queues (it may sort ahead of every sequence number: "0").
			kids = l.contenders(kids)
			l.alone.Store(len(kids) == 1)
			if l.cfg.FastHandoff && standard {
				// The standard predicate with one lease needs only our place and the
				// node right ahead: one pass, no sort of the whole queue.
				var found bool
				if ours, watch, found = l.position(kids, name); !found {
					return nil, ErrNodeLost
				}
				behind = len(kids) - ours - 1
				holds = ours == 0
			} else {
				sorted = l.Sorted(kids)
				ours = slices.Index(sorted, name)
				if ours < 0 {
					return nil, ErrNodeLost
				}
				behind = len(sorted) - ours - 1
				var err error
				if holds, watch, err = pred(sorted, ours, l.cfg.MaxLeases); err != nil {
					return nil, err
				}
			}
		}
		if holds {
			// The node was created (or, after a connection loss, found and checked to be
			// ours) in generation gen; if the generation is unchanged, so is the session.
			g, sid := c.Session()
			if g != gen {
				return nil, ErrNodeLost // taken over a session change: not ours to trust
			}
			return NewHeld(node, gen, sid, behind).WithWatch(early), nil
		}
		if try {
			return nil, ErrLocked
		}
		w, err := l.watchAhead(ctx, framework.JoinPath(l.cfg.Path, watch))
		if errors.Is(err, framework.ErrNoNode) {
			// Gone already: look again, after a sync, as after a wait (this read may come
			// from a server that applied the delete but not what followed it).
			waited = true
			continue
		}
		if err != nil {
			return nil, err
		}
		select {
		case <-w.Done():
			waited = true
			handedOff = l.cfg.FastHandoff && w.Event().Type == zk.EventNodeDeleted && ours == 1
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.Done():
			return nil, framework.ErrClosed
		}
	}
}

// watchAhead sets a watch on the node we wait for: a data watch (no watch is left
// behind when the node is gone), or, when we may not read it (another client's node with
// its own ACL), a children watch on the lock's path: ZooKeeper does not fire a watch of
// ours, exists or data, on a node we may not read, while the parent's children watch
// fires when it goes (and at any other change of the queue, after which the caller
// looks again). It fails with ErrNoNode when the node is gone.
func (l *Internals) watchAhead(ctx context.Context, p string) (*framework.Watch, error) {
	c := l.cfg.Client
	_, _, w, err := c.GetDataW(ctx, p)
	if !errors.Is(err, framework.ErrNoAuth) {
		return w, err
	}
	kids, _, w, err := c.ChildrenW(ctx, l.cfg.Path)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(kids, path.Base(p)) {
		return nil, fmt.Errorf("%s: %w", p, framework.ErrNoNode)
	}
	return w, nil
}

// position returns our place among kids in lock order (Sorted's: by sort key, then by
// name), the name of the node right ahead of ours ("" when first), and whether name is
// among kids at all; in one pass, without sorting.
func (l *Internals) position(kids []string, name string) (ours int, ahead string, found bool) {
	key := l.cfg.SortKey(name)
	var aheadKey string
	for _, k := range kids {
		if k == name {
			found = true
			continue
		}
		kk := l.cfg.SortKey(k)
		if kk > key || (kk == key && k > name) {
			continue
		}
		ours++
		if ahead == "" || kk > aheadKey || (kk == aheadKey && k > ahead) {
			ahead, aheadKey = k, kk
		}
	}
	return ours, ahead, found
}

// deleteNode deletes a node of ours after a failure, on a context detached from the
// caller's (which may be what failed), and guaranteed (Cleanup). When the caller's context
// ended, the call must return now: the client's background worker deletes the node (one
// request, sent at once on a live connection) instead of the caller waiting for it, which
// on a stalled connection would hold the caller for the cleanup's whole bound. Only a
// node of session owner is deleted (framework.OwnedBy): once that session ended, a node
// at the path is another client's.
func (l *Internals) deleteNode(ctx context.Context, node string, owner int64) {
	c := l.cfg.Client
	if ctx.Err() != nil {
		_ = c.Delete(ctx, node, framework.InBackground(), framework.OwnedBy(owner))
		return
	}
	Cleanup(ctx, c, func(cctx context.Context) {
		_ = c.Delete(cctx, node, framework.Quietly(), framework.Guaranteed(), framework.OwnedBy(owner))
	})
}

// OthersWaiting reports whether the lock's parent has lock nodes (Config.Contender) other
// than our node (one request, a listing): whether another contender queues. It reports
// true also when our node is not among them (deleted by someone else, perhaps with its
// parent, which was made again with another contender's node in it): the lock is then
// not ours to hand on. When it reports false, w is the children watch the listing set
// (Held.WithWatch): until it fires, the children are as the listing showed them.
func (l *Internals) OthersWaiting(ctx context.Context, ours string) (others bool, w *framework.Watch, err error) {
	kids, _, w, err := l.cfg.Client.ChildrenW(ctx, l.cfg.Path)
	if errors.Is(err, framework.ErrNoNode) {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	kids = l.contenders(kids)
	if len(kids) != 1 || kids[0] != framework.NodeName(ours) {
		// The watch fires at the next change of the children (our delete at the latest).
		return true, nil, nil
	}
	return false, w, nil
}

// Release deletes a held node (guaranteed), only while the session that took it owns it
// (framework.OwnedBy): once that session ended, a node at the path is another client's.
// A node that is already gone is not an error here; callers decide what a lost lease
// means.
func (l *Internals) Release(ctx context.Context, h *Held) error {
	return l.cfg.Client.Delete(ctx, h.Path, framework.Quietly(), framework.Guaranteed(), framework.OwnedBy(h.SessionID))
}

// Cleanup runs fn, the cleanup after an acquisition failed or was given up (deleting or
// releasing what it made), on a context detached from ctx and bounded by the cleanup
// timeout, on a goroutine of c (GoCleanup: c's Close waits for it, and
// c.WaitGuaranteedDeletes too). It returns when fn does, or CancelGrace after ctx ends,
// whichever comes first: the caller returns promptly after its context (on a stalled
// connection fn would hold it for the whole bound) while fn goes on. With a nil or closed client, fn runs at once (its
// requests fail fast). It reports whether fn has run (then what fn wrote may be read).
func Cleanup(ctx context.Context, c *framework.Client, fn func(context.Context)) bool {
	done := make(chan struct{})
	run := func() {
		defer close(done)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		fn(cctx)
	}
	if c == nil || !c.GoCleanup(run) {
		run()
		return true
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
	}
	// The caller's context has ended. A live connection answers the clean-up within a
	// round trip: wait for it a moment, so that what the caller gave up is free when it
	// returns; a stalled one is left to the background.
	t := time.NewTimer(CancelGrace)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
