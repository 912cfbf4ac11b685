package semaphore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
)

// errLeaseNodeLost marks a lease node that vanished while waiting: acquireOne starts
// over. (A vanished inner-mutex node is retried by the lock internals already.)
var errLeaseNodeLost = fmt.Errorf("lease node: %w", locks.ErrNodeLost)

// errInnerLockLost marks an inner-lock node that vanished while its acquirer waited for
// room: another acquirer may have taken the inner lock and queued a lease node too, so
// acquireOne gives up its lease node and starts over.
var errInnerLockLost = fmt.Errorf("inner lock node: %w", locks.ErrNodeLost)

// startsOver reports whether err, from an attempt, makes acquireOne start over.
func startsOver(err error) bool {
	return errors.Is(err, errLeaseNodeLost) || errors.Is(err, errInnerLockLost)
}

const (
	leaseName      = "lease-"
	cleanupTimeout = 10 * time.Second
)

// Option configures a Semaphore.
type Option func(*options)

type options struct {
	data     []byte
	onRevoke func(*Lease)
}

// RevokeData is what a revocation request writes into a holder's lease node.
const RevokeData = locks.RevokeData

// WithNodeData sets the data written into each lease node (Lease.Data reads it back;
// empty: none). The default is what Curator writes by default: the host's IP address, as
// text.
func WithNodeData(b []byte) Option { return func(o *options) { o.data = append([]byte{}, b...) } }

// WithRevocationListener makes the semaphore's leases revocable, as a revocable mutex's
// (CURATOR-650): each lease watches its node, and fn is called with the lease (on a
// goroutine of the lease) when someone asks its holder to let go by writing __REVOKE__
// into the node (Revoke, `zkcurator lock revoke`, Curator's Revoker). Releasing is up to
// fn; a panic in fn is logged (at Error, on the client's logger). The default is not revocable. While it holds, a revocable lease keeps one data
// watch on its node; a lease whose node is deleted by someone else ends (Done closes).
func WithRevocationListener(fn func(*Lease)) Option {
	return func(o *options) { o.onRevoke = fn }
}

// Revoke asks the holder of the lease node at nodePath to let go, by writing __REVOKE__
// into it (Curator's Revoker.attemptRevoke). Only a holder whose semaphore was made with
// WithRevocationListener reacts. A node that no longer exists is not an error.
func Revoke(ctx context.Context, c *framework.Client, nodePath string) error {
	if err := locks.Revoke(ctx, c, nodePath); err != nil {
		return fmt.Errorf("semaphore: %w", err)
	}
	return nil
}

// Semaphore is a distributed counting semaphore. It holds no per-acquisition state and is
// safe for concurrent use.
type Semaphore struct {
	client     *framework.Client
	path       string
	leasesPath string
	maxLeases  int    // fixed maximum, or 0 with countPath
	countPath  string // shared count node
	opts       options
	inner      *locks.Internals
}

// New returns a semaphore on path with a fixed maximum of leases. It checks its
// arguments but does not talk to ZooKeeper.
func New(c *framework.Client, path string, maxLeases int, opts ...Option) (*Semaphore, error) {
	if maxLeases < 1 {
		return nil, fmt.Errorf("semaphore: %w: max leases must be at least 1, got %d", framework.ErrInvalidArgument, maxLeases)
	}
	return newSemaphore(c, path, maxLeases, "", opts)
}

// NewShared returns a semaphore on path whose maximum is read from the shared count node
// at countPath (a 4-byte big-endian integer; see SetCount). When the node does not exist,
// the first acquirer creates it with seed.
func NewShared(c *framework.Client, path, countPath string, seed int, opts ...Option) (*Semaphore, error) {
	if err := framework.ValidatePath(countPath); err != nil {
		return nil, fmt.Errorf("semaphore: count path: %w", err)
	}
	if countPath == "/" || framework.IsReservedPath(countPath) {
		return nil, fmt.Errorf("semaphore: %w: %q cannot be a count path", framework.ErrInvalidArgument, countPath)
	}
	if seed < 1 || seed > math.MaxInt32 {
		return nil, fmt.Errorf("semaphore: %w: seed must be at least 1, got %d", framework.ErrInvalidArgument, seed)
	}
	return newSemaphore(c, path, seed, countPath, opts)
}

func newSemaphore(c *framework.Client, path string, maxLeases int, countPath string, opts []Option) (*Semaphore, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := framework.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("semaphore: %w", err)
	}
	if path == "/" || framework.IsReservedPath(path) {
		return nil, fmt.Errorf("semaphore: %w: %q cannot be a semaphore path", framework.ErrInvalidArgument, path)
	}
	inner, err := locks.New(locks.Config{Client: c, Path: framework.JoinPath(path, "locks"), LockName: "lock-", MaxLeases: 1, FastHandoff: true, Unobserved: true, NoLease: true})
	if err != nil {
		return nil, fmt.Errorf("semaphore: %w", err)
	}
	if err := c.CheckDataSize(framework.JoinPath(path, "leases", leaseName), len(o.data)); err != nil {
		return nil, fmt.Errorf("semaphore: node data: %w", err)
	}
	return &Semaphore{client: c, path: path, leasesPath: framework.JoinPath(path, "leases"),
		maxLeases: maxLeases, countPath: countPath, opts: o, inner: inner}, nil
}

// SetCount sets the shared count node at countPath to n (creating it if needed), for
// semaphores made with NewShared.
func SetCount(ctx context.Context, c *framework.Client, countPath string, n int) error {
	if c == nil {
		return fmt.Errorf("semaphore: %w: nil client", framework.ErrInvalidArgument)
	}
	if n < 1 || n > math.MaxInt32 {
		return fmt.Errorf("semaphore: %w: count must be at least 1, got %d", framework.ErrInvalidArgument, n)
	}
	_, err := c.Create(ctx, countPath, encodeCount(n), framework.WithContainerParents(), framework.OrSetData())
	if err != nil {
		return fmt.Errorf("semaphore: set count %s: %w", countPath, err)
	}
	return nil
}

func encodeCount(n int) []byte { return sharedcount.Encode(int32(n)) }

// maxNow returns the current maximum, and (watch) a watch on the shared count when there
// is one.
func (s *Semaphore) maxNow(ctx context.Context, watch bool) (int, *framework.Watch, error) {
	if s.countPath == "" {
		return s.maxLeases, nil, nil
	}
	for {
		var data []byte
		var ch *framework.Watch
		var err error
		if watch {
			data, _, ch, err = s.client.GetDataW(ctx, s.countPath)
		} else {
			data, _, err = s.client.GetData(ctx, s.countPath)
		}
		if errors.Is(err, framework.ErrNoNode) {
			// No count yet: the first participant seeds it; then read it again.
			_, err = s.client.Create(ctx, s.countPath, encodeCount(s.maxLeases), framework.WithContainerParents())
			if err != nil && !errors.Is(err, framework.ErrNodeExists) {
				return 0, nil, err
			}
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		n32, err := sharedcount.Decode(s.countPath, data)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %w", ErrBadCount, err)
		}
		n := int(n32)
		if n < 1 {
			return 0, nil, fmt.Errorf("%w: %s holds %d", ErrBadCount, s.countPath, n)
		}
		return n, ch, nil
	}
}

// Acquire takes one lease, blocking until one is free, ctx ends or the client closes.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	ls, err := s.acquire(ctx, 1, false)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// AcquireN takes n leases, one after the other. On failure or cancellation, the leases
// it took are returned and no node is left. A success is n leases held at once: when one
// it took may have been lost while it waited for the next (its session expired, say), it
// gives the others back and fails with ErrNodeVanished. As with Curator's acquire(n), concurrent
// AcquireN calls on one semaphore can each hold part of what they need and wait for the
// rest until their contexts end: give it a deadline, or serialise multi-lease takers.
// Asking for more than the maximum fails at once with ErrTooMany, taking nothing; with a
// shared count, more than the count holds when the call starts (Curator's acquire(n)
// takes what it can and waits until its time is up).
func (s *Semaphore) AcquireN(ctx context.Context, n int) ([]*Lease, error) {
	return s.acquire(ctx, n, false)
}

// TryAcquire takes one lease if one is free now, and returns ErrNoLeases otherwise. It
// never waits: when another acquirer holds the inner mutex, it makes its lease node
// without it, and keeps it only if the leases then number no more than the maximum.
// Two tries racing for the last free lease may both find it taken by the other's node
// (both return ErrNoLeases); they never both get it.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	ls, err := s.acquire(ctx, 1, true)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// TryAcquireN takes n leases if they are free now, and returns ErrNoLeases (having taken
// none) otherwise.
func (s *Semaphore) TryAcquireN(ctx context.Context, n int) ([]*Lease, error) {
	return s.acquire(ctx, n, true)
}

func (s *Semaphore) acquire(ctx context.Context, n int, try bool) ([]*Lease, error) {
	if n < 1 {
		return nil, fmt.Errorf("semaphore: %w: cannot acquire %d leases", framework.ErrInvalidArgument, n)
	}
	if s.countPath == "" && n > s.maxLeases {
		return nil, fmt.Errorf("%w: %d > %d", ErrTooMany, n, s.maxLeases)
	}
	if s.countPath != "" && n > 1 {
		// The shared count, as it is now (one read; a count is at least 1, so a single
		// lease needs none): more leases than it allows could never all be had unless
		// someone raises it, and the call would hold part of them until its context ends.
		max, _, err := s.maxNow(ctx, false)
		if err != nil {
			return nil, fmt.Errorf("semaphore: acquire %s: %w", s.path, err)
		}
		if n > max {
			return nil, fmt.Errorf("%w: %d > %d (the count at %s)", ErrTooMany, n, max, s.countPath)
		}
	}
	got, err := s.acquireEach(ctx, n, try)
	if err == nil && anyLost(got) {
		// A lease taken first may have been lost while a later one was waited for: the n
		// leases were not held at once. Give back what is left of them.
		locks.Cleanup(ctx, s.client, func(cctx context.Context) { _ = ReturnAll(cctx, got...) })
		return nil, fmt.Errorf("semaphore: acquire %s: a lease taken first may have been lost while the others were taken: %w", s.path, locks.ErrNodeLost)
	}
	return got, err
}

// acquireEach takes n leases one after the other; on failure it returns those it took.
func (s *Semaphore) acquireEach(ctx context.Context, n int, try bool) ([]*Lease, error) {
	var got []*Lease
	for i := 0; i < n; i++ {
		l, err := s.acquireOne(ctx, try)
		if err != nil {
			locks.Cleanup(ctx, s.client, func(cctx context.Context) { _ = ReturnAll(cctx, got...) })
			return nil, err
		}
		got = append(got, l)
	}
	return got, nil
}

// anyLost reports whether a lease of ls may have been lost (its session's loss signal
// fired, its node was deleted by someone else) or was taken in another session
// generation than the client's now.
func anyLost(ls []*Lease) bool {
	for _, l := range ls {
		if l.core.Lost() || l.core.Held.Gen != l.sem.client.Generation() {
			return true
		}
	}
	return false
}

func (s *Semaphore) acquireOne(ctx context.Context, try bool) (_ *Lease, err error) {
	start := time.Now()
	defer func() { locks.ObserveWait(s.client, "semaphore", s.path, start, err) }()
	for retries := 0; ; retries++ {
		l, err := s.attempt(ctx, try)
		if !startsOver(err) {
			return l, err
		}
		// Our lease node vanished (the session was lost): start over if the retry policy
		// allows, after the sleep it asks for.
		sleep, ok := s.client.RetryPolicy().AllowRetry(retries, time.Since(start))
		if !ok {
			return nil, fmt.Errorf("semaphore: acquire %s: %w", s.path, locks.ErrNodeLost)
		}
		if err := locks.SleepBeforeRetry(ctx, s.client, sleep); err != nil {
			return nil, fmt.Errorf("semaphore: acquire %s: %w", s.path, err)
		}
	}
}

// leaseData is the lease nodes' data: the option's, or Curator's default.
func (s *Semaphore) leaseData() []byte {
	if s.opts.data != nil {
		return s.opts.data
	}
	return locks.DefaultNodeData()
}

// testHookInnerLocked, when set (by the package's internal tests only), runs right after
// an attempt took the inner lock.
var testHookInnerLocked func(*Semaphore)

// testHookReleaseInner, when set (by the package's internal tests only), runs on the
// goroutine that releases a granted lease's inner lock, before its delete is sent.
var testHookReleaseInner atomic.Pointer[func(*Semaphore)]

// attempt is one try at one lease: inner mutex, lease node, wait for room.
func (s *Semaphore) attempt(ctx context.Context, try bool) (*Lease, error) {
	c := s.client
	if try {
		// An inner lock this client is still deleting for a lease it granted is no
		// contender's: wait for those deletes, or the try would find the inner lock taken.
		if err := innerReleases.wait(ctx, c, s.path); err != nil {
			return nil, fmt.Errorf("semaphore: acquire %s: %w", s.path, err)
		}
	}
	// The inner lock, taken by someone else (another acquirer between taking it and
	// making its lease node, or one waiting for room), does not tell whether a lease is
	// free: a try then goes on without it. The inner lock only keeps waiters from
	// queueing more than one extra node at a time; a try never waits, and its node, held
	// only when the listing behind its create shows no more lease nodes than the maximum,
	// is safe without it: of any set of holders at once, the one that listed last saw
	// every other's node. A waiter holding the inner lock keeps its node in the count, so
	// a try does not get ahead of it.
	gen := c.Generation()
	var lock *locks.Held
	lock, err := s.inner.Acquire(ctx, try)
	switch {
	case try && errors.Is(err, locks.ErrLocked):
		lock = nil
	case err != nil:
		return nil, fmt.Errorf("semaphore: acquire %s: %w", s.path, err)
	default:
		gen = lock.Gen
	}
	innerHeld := lock != nil // released here unless handed to the lease (releaseInner)
	defer func() {
		if innerHeld {
			locks.Cleanup(ctx, c, func(cctx context.Context) { _ = s.inner.Release(cctx, lock) })
		}
	}()
	if lock != nil && testHookInnerLocked != nil {
		testHookInnerLocked(s)
	}
	// The lease node must be created in the inner lock's session: only then does the
	// inner lock serialise it. Should the session have changed since, the inner lock went
	// with it: start over.
	if c.Generation() != gen {
		return nil, errLeaseNodeLost
	}
	// Unless this is a try, the listing sent behind the create sets the children watch a
	// wait for room needs.
	node, first, err := locks.CreateAndListW(ctx, c, s.leasesPath, leaseName, s.leaseData(), true, !try)
	if err != nil {
		return nil, fmt.Errorf("semaphore: acquire %s: %w", s.path, err)
	}
	name := framework.NodeName(node)
	// The session the node was made in, as far as this client knows: its deletes below
	// delete it only while that session owns it (once it ended, a node at the path is
	// another client's).
	_, owner := c.Session()
	fail := func(err error) (*Lease, error) {
		locks.Cleanup(ctx, c, func(cctx context.Context) {
			_ = c.Delete(cctx, node, framework.Quietly(), framework.Guaranteed(), framework.OwnedBy(owner))
		})
		if startsOver(err) {
			return nil, err
		}
		return nil, fmt.Errorf("semaphore: acquire %s: %w", s.path, err)
	}
	return s.waitForRoom(ctx, &attemptRun{gen: gen, lock: lock, node: node, name: name, first: first,
		try: try, fail: fail, innerHeld: &innerHeld})
}

// attemptRun is what an attempt has made when it waits for room: its inner lock (nil: a
// try without it), its lease node, the listing sent behind the create, and its failure
// path (fail deletes the lease node).
type attemptRun struct {
	gen       uint64
	lock      *locks.Held
	node      string
	name      string
	first     func() ([]string, *framework.Watch)
	try       bool
	fail      func(error) (*Lease, error)
	innerHeld *bool // the attempt releases the inner lock unless the lease takes it
}

// waitForRoom lists the leases until ours is among the first maxLeases (a lease), or a
// try finds no room, the session changes, ctx ends or the client closes (a.fail).
func (s *Semaphore) waitForRoom(ctx context.Context, a *attemptRun) (*Lease, error) {
	c := s.client
	gen, lock, node, name, first, try, fail := a.gen, a.lock, a.node, a.name, a.first, a.try, a.fail
	var err error
	// The session may also have changed while the create was in flight: the framework
	// then made the node in the new session, which the inner lock (gone with the old one)
	// did not serialise. Waiting on it could leave two lease nodes waiting on each other
	// for ever (one lease, two nodes, neither first): give it up and start over. The check
	// is repeated after every wait.
	if c.Generation() != gen {
		return fail(errLeaseNodeLost)
	}
	// While waiting, one children watch and one count watch are armed at a time; each is
	// armed again only after it fired (go-zookeeper keeps every watcher until its node
	// changes).
	watch := false
	var childCh, countCh *framework.Watch
	// waited: we waited for a watch since the last listing. The server may lag (a
	// follower cut off from its peers answers from its old state): the listing that may
	// grant the lease then comes after a sync, so that it sees every write committed
	// before (our inner lock's node deleted and another lease made meanwhile, say). The
	// first listing follows our own create, and shows the leases as of that write.
	waited := false
	woke := false // we waited for a watch once at least
	for {
		if waited {
			if err := c.Sync(ctx, s.leasesPath); err != nil {
				return fail(err)
			}
			waited = false
		}
		var kids []string
		if first != nil {
			var w *framework.Watch
			kids, w = first()
			first = nil
			if kids != nil && w != nil {
				childCh, watch = w, true
			}
		}
		switch {
		case kids != nil: // the listing sent right behind our create shows our node
		case watch && childCh == nil:
			kids, _, childCh, err = c.ChildrenW(ctx, s.leasesPath)
		default:
			kids, _, err = c.Children(ctx, s.leasesPath)
		}
		if errors.Is(err, framework.ErrNoNode) {
			// The leases' parent is gone, and our node with it (deleted, perhaps made
			// again): as when our node is missing from the list.
			return fail(errLeaseNodeLost)
		}
		if err != nil {
			return fail(err)
		}
		if !slices.Contains(kids, name) {
			return fail(errLeaseNodeLost)
		}
		max, ch2, err := s.maxNow(ctx, watch && countCh == nil)
		if err != nil {
			return fail(err)
		}
		if ch2 != nil {
			countCh = ch2 // armed once; armed again only after it fired
		}
		if len(kids) <= max {
			g, sid := c.Session()
			if g != gen {
				return fail(errLeaseNodeLost)
			}
			// The children watch set by a listing that showed our node, when armed, speaks
			// for the node until the children change: the lease need not read it first.
			h := locks.NewHeld(node, gen, sid, 0).WithWatch(childCh)
			if lock == nil {
				return s.newLease(h, closedChan), nil // a try without the inner lock
			}
			*a.innerHeld = false
			return s.newLease(h, s.releaseInner(ctx, lock)), nil
		}
		if try {
			return fail(fmt.Errorf("%w: %s", ErrNoLeases, s.path))
		}
		if !watch {
			watch = true // look again, this time with watches set
			continue
		}
		if woke && lock != nil {
			// Still no room after a change: our inner lock must still be ours, or another
			// acquirer may hold it too and queue its node with ours, which together could
			// keep a free lease from both of us.
			if err := s.innerHeld(ctx, lock); err != nil {
				return fail(err)
			}
		}
		waited, woke = true, true
		select {
		case <-childCh.Done():
			childCh = nil
		case <-countCh.Done():
			countCh = nil
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-c.Done():
			return fail(framework.ErrClosed)
		}
		if c.Generation() != gen {
			return fail(errLeaseNodeLost)
		}
	}
}

// innerHeld checks that the inner lock's node is still there and of its session (one
// request); errInnerLockLost when not (deleted by someone else).
func (s *Semaphore) innerHeld(ctx context.Context, lock *locks.Held) error {
	st, err := s.client.Exists(ctx, lock.Path)
	if err != nil {
		return err
	}
	if st == nil || st.EphemeralOwner != lock.SessionID {
		return errInnerLockLost
	}
	return nil
}

// releaseInner deletes the inner lock's node on a goroutine of the client, so that an
// acquisition returns its lease as soon as the count allowed it, without waiting for that
// delete's reply; the returned channel closes when the delete is done. A lease's Release
// waits for it, so that nothing of an acquisition is left once its lease is released, and
// so does a try of the same client on the same semaphore (innerReleases).
func (s *Semaphore) releaseInner(ctx context.Context, lock *locks.Held) <-chan struct{} {
	done := make(chan struct{})
	forget := innerReleases.add(s.client, s.path, done)
	release := func() {
		defer close(done)
		defer forget()
		if hook := testHookReleaseInner.Load(); hook != nil {
			(*hook)(s)
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = s.inner.Release(cctx, lock)
	}
	if !s.client.Go(release) {
		release() // the client is closed: the delete fails at once (the node goes with the session)
	}
	return done
}

// closedChan is a closed channel: a lease taken without the inner lock has none to wait for.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// innerReleases are the inner-lock deletes of granted leases not yet done, per client
// and semaphore path (whatever Semaphore value took them).
var innerReleases = pendingReleases{m: map[pendingKey]map[<-chan struct{}]struct{}{}}

type pendingKey struct {
	c    *framework.Client
	path string
}

type pendingReleases struct {
	mu sync.Mutex
	m  map[pendingKey]map[<-chan struct{}]struct{}
}

// add records done (closed when the delete is done) and returns the func that forgets it.
func (p *pendingReleases) add(c *framework.Client, path string, done <-chan struct{}) (forget func()) {
	k := pendingKey{c, path}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[k] == nil {
		p.m[k] = map[<-chan struct{}]struct{}{}
	}
	p.m[k][done] = struct{}{}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.m[k], done)
		if len(p.m[k]) == 0 {
			delete(p.m, k)
		}
	}
}

// wait waits until every delete recorded for c and path so far is done, ctx ends or c
// closes.
func (p *pendingReleases) wait(ctx context.Context, c *framework.Client, path string) error {
	p.mu.Lock()
	var pending []<-chan struct{}
	for done := range p.m[pendingKey{c, path}] {
		pending = append(pending, done)
	}
	p.mu.Unlock()
	for _, done := range pending {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.Done():
			return framework.ErrClosed
		}
	}
	return nil
}

// Participants returns the names of the lease nodes.
func (s *Semaphore) Participants(ctx context.Context) ([]string, error) {
	kids, _, err := s.client.Children(ctx, s.leasesPath)
	if errors.Is(err, framework.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("semaphore: participants of %s: %w", s.path, err)
	}
	framework.SortBySequence(kids, leaseName)
	return kids, nil
}

// ReturnAll releases every lease given, trying each one, and returns the errors joined.
func ReturnAll(ctx context.Context, leases ...*Lease) error {
	var errs []error
	for _, l := range leases {
		if l != nil {
			errs = append(errs, l.Release(ctx))
		}
	}
	return errors.Join(errs...)
}

// newLease starts a lease on h, revocable when the semaphore is; innerDone closes when
// the inner lock taken for it is released.
func (s *Semaphore) newLease(h *locks.Held, innerDone <-chan struct{}) *Lease {
	l := &Lease{sem: s, innerDone: innerDone}
	var onRevoke func()
	if fn := s.opts.onRevoke; fn != nil {
		onRevoke = func() { fn(l) }
	}
	l.core = locks.NewLease(s.client, h, onRevoke)
	return l
}

// Lease is one lease of a semaphore. Its methods are safe for concurrent use.
type Lease struct {
	sem       *Semaphore
	core      *locks.Lease
	innerDone <-chan struct{} // closed when the inner lock taken for the lease is released
}

// Release gives the lease back (deleting its node, guaranteed). Releasing twice returns
// ErrNotHeld; a lease that may have been lost returns ErrLeaseLost, and so does one whose
// node someone else deleted while it was held (its parent deleted and made again, say):
// the lease was not this holder's alone all along. When the delete is resent after a lost
// connection and finds no node, and nothing shows whether its first attempt or someone
// else deleted it, it returns an error matching framework.ErrUnknownOutcome.
func (l *Lease) Release(ctx context.Context) error {
	// The inner lock's delete, sent as the lease was granted, is done (almost always
	// already) before the lease's node goes; an ended ctx does not keep the lease's node.
	select {
	case <-l.innerDone:
	case <-ctx.Done():
	}
	if err := l.core.Release(ctx); err != nil {
		return fmt.Errorf("semaphore: release: %w", err)
	}
	return nil
}

// Done returns a channel closed when the lease is released or may have been lost.
func (l *Lease) Done() <-chan struct{} { return l.core.Done() }

// Node returns the path of the lease's node.
func (l *Lease) Node() string { return l.core.Held.Path }

// Data reads the lease node's data from ZooKeeper.
func (l *Lease) Data(ctx context.Context) ([]byte, error) {
	d, _, err := l.sem.client.GetData(ctx, l.core.Held.Path)
	if err != nil {
		return nil, fmt.Errorf("semaphore: lease data: %w", err)
	}
	return d, nil
}

// Token returns a fencing token: the lease node's czxid shifted left by 8 bits. For the
// semaphore mutex it strictly increases from one holder to the next. The first call reads
// the czxid (one request); it fails with ErrLeaseLost when the node is no longer this
// session's.
func (l *Lease) Token(ctx context.Context) (int64, error) {
	z, err := l.core.Czxid(ctx)
	if err != nil {
		return 0, fmt.Errorf("semaphore: token of %s: %w", l.core.Held.Path, err)
	}
	return z << 8, nil
}

type leaseKey struct{ s *Semaphore }

// IsLeaseKey marks leaseKey as a lease's context key (locks.WithoutLeases).
func (leaseKey) IsLeaseKey() {}

// Context returns a context derived from parent that carries the lease and is cancelled
// when the lease ends.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return l.core.Context(parent, leaseKey{l.sem}, l)
}

// Mutex is Curator's InterProcessSemaphoreMutex: the semaphore with one lease. It is not
// re-entrant. It is safe for concurrent use.
type Mutex struct{ sem *Semaphore }

// NewMutex returns a semaphore mutex on path.
func NewMutex(c *framework.Client, path string, opts ...Option) (*Mutex, error) {
	s, err := New(c, path, 1, opts...)
	if err != nil {
		return nil, err
	}
	return &Mutex{sem: s}, nil
}

// Acquire takes the mutex, blocking until it is free, ctx ends or the client closes. A
// context that carries this mutex's live lease fails at once with ErrAlreadyHeld.
func (m *Mutex) Acquire(ctx context.Context) (*Lease, error) {
	if err := m.reentry(ctx); err != nil {
		return nil, err
	}
	return m.sem.Acquire(ctx)
}

// TryAcquire takes the mutex if it is free now, and returns ErrNoLeases otherwise.
func (m *Mutex) TryAcquire(ctx context.Context) (*Lease, error) {
	if err := m.reentry(ctx); err != nil {
		return nil, err
	}
	return m.sem.TryAcquire(ctx)
}

func (m *Mutex) reentry(ctx context.Context) error {
	if l, _ := ctx.Value(leaseKey{m.sem}).(*Lease); l != nil {
		select {
		case <-l.Done():
		default:
			return fmt.Errorf("%w: %s", ErrAlreadyHeld, m.sem.path)
		}
	}
	return nil
}

// Participants returns the names of the lease nodes (at most one holder).
func (m *Mutex) Participants(ctx context.Context) ([]string, error) { return m.sem.Participants(ctx) }
