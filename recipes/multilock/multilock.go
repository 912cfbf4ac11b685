// Package multilock takes several locks as one (Curator's InterProcessMultiLock): any mix
// of mutexes, read or write locks and semaphore mutexes.
//
// New takes the locks in the order given; if one fails or ctx ends, the ones taken are
// released in reverse order and the failure is reported, so it is all or none. Release
// gives them back in reverse order, trying every one, and joins the errors. The lease's
// Done closes when any part's lease may have been lost. Taking the same locks in the same
// order everywhere avoids deadlocks between such multi-locks; New does not reorder them.
//
// NewFromPaths (one mutex per path) first tries every lock at once: the creates and
// listings of all the locks go out together, so an uncontended acquisition costs one
// round trip whatever the number of paths, and a release one round trip too (the deletes
// go out together). When a lock is taken by someone else, it keeps the locks it got that
// come first in path order, gives back the others, and waits for the rest one by one in
// path order (sorted by path, whatever order the paths were given in): two such
// multi-locks over the same paths never deadlock, whatever orders they were given.
// Curator's InterProcessMultiLock takes its locks in the order given: a Curator
// multi-lock and ours on the same paths avoid each other's deadlock only when Curator's
// order is the path order.
//
// Requests: the sum of its locks' (a mutex each for NewFromPaths), nothing more when
// uncontended; under contention, a lock tried and given back costs its create, listing
// and delete, so after a try found a lock taken the next 8 acquisitions of that
// multi-lock go straight to path order, without tries.
package multilock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
	"github.com/zoocurator/zoocurator/internal/sentinel"
	"github.com/zoocurator/zoocurator/recipes/mutex"
)

var (
	// ErrNoLocks is returned by New without locks.
	ErrNoLocks = sentinel.New("multilock: no locks", framework.ErrInvalidArgument)
	// ErrDuplicatePath is returned by NewFromPaths when a path appears twice.
	ErrDuplicatePath = sentinel.New("multilock: duplicate path", framework.ErrInvalidArgument)
	// ErrNotHeld is returned when releasing a multi-lease twice.
	ErrNotHeld = sentinel.New("multilock: not held", framework.ErrNotHeld)
)

const cleanupTimeout = 10 * time.Second

// Lease is what multilock needs of a lock's lease. The leases of mutex, rwlock and
// semaphore have this shape. When Acquire's context ended, the leases it got are released
// with that ended context: Release must then return at once and finish in the background
// (those of mutex, rwlock and semaphore hand their deletes to the client's
// guaranteed-delete worker, which Client.WaitGuaranteedDeletes waits for).
type Lease interface {
	Release(ctx context.Context) error
	Done() <-chan struct{}
}

// Lock is what multilock needs of a lock: a way to acquire a lease. Make one with From.
type Lock func(ctx context.Context) (Lease, error)

// From turns a lock's Acquire method into a Lock, e.g. From(m.Acquire) for a
// *mutex.Mutex, From(rw.WriteLock().Acquire), From(semMutex.Acquire).
// From(nil) returns nil, which New refuses.
func From[L Lease](acquire func(context.Context) (L, error)) Lock {
	if acquire == nil {
		return nil
	}
	return func(ctx context.Context) (Lease, error) {
		l, err := acquire(ctx)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

// MultiLock is several locks taken as one. It is safe for concurrent use.
type MultiLock struct {
	locks []Lock
	// sorted, for NewFromPaths only: the mutexes in path order, each with its index in the
	// order given.
	sorted []pathLock
	client *framework.Client // NewFromPaths's, for the cleanup after a cancel
	// ordered counts down the acquisitions that go straight to path order without trying
	// every lock first: set after a try found a lock taken (under contention the tries
	// cost a create, a listing and a delete each for nothing).
	ordered atomic.Int32
}

// orderedAfterContention is how many acquisitions of a multi-lock go straight to path
// order after one found a lock taken; then it tries every lock at once again.
const orderedAfterContention = 8

// pathLock is one mutex of a multi-lock made by NewFromPaths.
type pathLock struct {
	m     *mutex.Mutex
	index int // in the order the paths were given
}

// New returns a multi-lock over locks, taken in the order given.
func New(locks ...Lock) (*MultiLock, error) {
	if len(locks) == 0 {
		return nil, ErrNoLocks
	}
	for i, l := range locks {
		if l == nil {
			return nil, fmt.Errorf("multilock: %w: lock %d is nil", framework.ErrInvalidArgument, i)
		}
	}
	return &MultiLock{locks: append([]Lock(nil), locks...)}, nil
}

// NewFromPaths returns a multi-lock over one mutex per path (Curator's convenience
// constructor).
func NewFromPaths(c *framework.Client, paths ...string) (*MultiLock, error) {
	if len(paths) == 0 {
		return nil, ErrNoLocks
	}
	seen := map[string]bool{}
	var locks []Lock
	var sorted []pathLock
	for i, p := range paths {
		if seen[p] {
			return nil, fmt.Errorf("%w: %s", ErrDuplicatePath, p)
		}
		seen[p] = true
		m, err := mutex.New(c, p)
		if err != nil {
			return nil, fmt.Errorf("multilock: %w", err)
		}
		locks = append(locks, From(m.Acquire))
		sorted = append(sorted, pathLock{m: m, index: i})
	}
	ml, err := New(locks...)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(sorted, func(a, b pathLock) int { return cmp.Compare(a.m.Path(), b.m.Path()) })
	ml.sorted, ml.client = sorted, c
	return ml, nil
}

// Acquire takes every lock, blocking until all are held, ctx ends or one fails: in the
// order given for a multi-lock made by New, all at once and then in path order for one
// made by NewFromPaths (see the package doc). On failure the locks taken are released
// and nothing is held. A lock taken that may be lost before the others are (its lease's
// Done closes; for NewFromPaths, also the client's loss signal for the session it was
// taken in) ends the wait: Acquire releases what it got and fails with an error matching
// the lock's ErrLeaseLost (framework.ErrLost). It never returns a multi-lease with a part
// already lost.
//
// A lease that can carry itself in a context (the leases of mutex, rwlock and semaphore
// have Context) is passed on to the acquisitions after it: a lock listed twice, or a read
// lock after the write lock of the same RWLock, fails at once with that recipe's
// ErrAlreadyHeld instead of waiting for itself forever (acquisitions never re-enter or
// downgrade through a context).
func (m *MultiLock) Acquire(ctx context.Context) (*MultiLease, error) {
	if m.sorted != nil {
		return m.acquireSorted(ctx)
	}
	var parts []Lease
	acquireCtx := ctx
	var cancels []context.CancelFunc
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	var held []heldPart
	for i, lock := range m.locks {
		wctx, stop := whileHeld(acquireCtx, held)
		l, err := lock(wctx)
		lost := stop()
		if err == nil {
			parts = append(parts, l)
			held = append(held, heldPart{index: i, done: l.Done()})
			if carrier, ok := l.(contextCarrier); ok {
				var cancel context.CancelFunc
				acquireCtx, cancel = carrier.Context(acquireCtx)
				cancels = append(cancels, cancel)
			}
		}
		if lost == nil && i == len(m.locks)-1 {
			lost = firstLost(held)
		}
		switch {
		case lost != nil:
			return nil, errors.Join(lost, releaseGot(ctx, parts))
		case err != nil:
			return nil, errors.Join(fmt.Errorf("multilock: lock %d: %w", i, err), releaseGot(ctx, parts))
		}
	}
	ml := &MultiLease{parts: parts, done: make(chan struct{}), released: make(chan struct{})}
	ml.watch()
	return ml, nil
}

// acquireSorted is Acquire for NewFromPaths: every lock tried at once, then the locks
// not got waited for in path order, holding only a prefix of that order while waiting.
func (m *MultiLock) acquireSorted(ctx context.Context) (*MultiLease, error) {
	n := len(m.sorted)
	got := make([]*mutex.Lease, n) // in path order
	errs := make([]error, n)
	// gens[i]: the client's session generation right after got[i] was granted, whose
	// loss signal ends it (the lease's Done closes only after that signal, on a goroutine).
	gens := make([]uint64, n)
	tried := m.ordered.Add(-1) < 0
	if tried {
		m.ordered.Store(0)
		each(n, func(i int) { got[i], errs[i] = m.sorted[i].m.TryAcquire(ctx); gens[i] = m.client.Generation() })
	} else {
		// Contended lately: no tries, straight to path order.
		for i := range errs {
			errs[i] = mutex.ErrLocked
		}
	}
	// Keep the locks got that come first in path order; a failure other than "taken"
	// ends the acquisition.
	prefix := n
	var hard error
	for i, err := range errs {
		if err == nil {
			continue
		}
		prefix = min(prefix, i)
		if tried && errors.Is(err, mutex.ErrLocked) {
			m.ordered.Store(orderedAfterContention)
		}
		if hard == nil && !errors.Is(err, mutex.ErrLocked) {
			hard = fmt.Errorf("multilock: lock %d: %w", m.sorted[i].index, err)
		}
	}
	if hard != nil {
		prefix = 0
	}
	if err := ctx.Err(); err != nil && hard == nil && prefix < n { // nothing more can be got
		hard, prefix = fmt.Errorf("multilock: %w", err), 0
	}
	// release releases the locks got from index from on (taking them out of got), on a
	// goroutine of the client: it waits for that while ctx is live; once ctx ended, the
	// caller returns now, and nothing is reported (locks.Cleanup).
	release := func(from int) error {
		give := slices.Clone(got[from:])
		clear(got[from:])
		var rerr error
		if !locks.Cleanup(ctx, m.client, func(cctx context.Context) { rerr = m.releaseSorted(cctx, give, from) }) {
			return nil
		}
		return rerr
	}
	if hard != nil {
		return nil, errors.Join(hard, release(0))
	}
	if rerr := release(prefix); rerr != nil {
		// A give-back that failed ends the acquisition too: the locks kept go as well.
		return nil, errors.Join(rerr, release(0))
	}
	// held are the parts got, each lost once its Done closes or its generation's loss
	// signal fires: waiting for the next part stops then.
	held := func(upTo int) []heldPart {
		var hs []heldPart
		for i, l := range got[:upTo] {
			if l != nil {
				hs = append(hs, heldPart{index: m.sorted[i].index, done: l.Done(), loss: m.client.LossSignal(gens[i])})
			}
		}
		return hs
	}
	for i := prefix; i < n; i++ {
		wctx, stop := whileHeld(ctx, held(i))
		l, err := m.sorted[i].m.Acquire(wctx)
		gens[i] = m.client.Generation()
		lost := stop()
		got[i] = l
		if lost != nil {
			return nil, errors.Join(lost, release(0))
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("multilock: lock %d: %w", m.sorted[i].index, err), release(0))
		}
	}
	// A part lost before the last one was got (or in the same moment): no success.
	if lost := firstLost(held(n)); lost != nil {
		return nil, errors.Join(lost, release(0))
	}
	parts := make([]Lease, n) // in the order given
	for i, l := range got {
		parts[m.sorted[i].index] = l
	}
	ml := &MultiLease{parts: parts, together: true, done: make(chan struct{}), released: make(chan struct{})}
	ml.watch()
	return ml, nil
}

// heldPart is a lease an acquisition got while it takes the others: lost once done
// closes, or loss (nil: none) fires.
type heldPart struct {
	index      int // in the order the locks were given
	done, loss <-chan struct{}
}

// lostPart is the error of an acquisition that lost a part it held while it took the
// others.
func lostPart(index int) error {
	return fmt.Errorf("multilock: lock %d: %w while the others were taken", index, locks.ErrLeaseLost)
}

// firstLost returns the lostPart error of the first part in hs that is lost now, or nil.
func firstLost(hs []heldPart) error {
	for _, h := range hs {
		select {
		case <-h.done:
			return lostPart(h.index)
		case <-h.loss: // a nil loss is never ready
			return lostPart(h.index)
		default:
		}
	}
	return nil
}

// whileHeld returns a context derived from ctx that is cancelled when a part in hs is
// lost, for the acquisition of the next part: it stops waiting then. stop ends the watch
// and returns the lostPart error when a part was lost (also one lost as it is called),
// nil otherwise.
func whileHeld(ctx context.Context, hs []heldPart) (_ context.Context, stop func() error) {
	if len(hs) == 0 {
		return ctx, func() error { return nil }
	}
	wctx, cancel := context.WithCancelCause(ctx)
	end := make(chan struct{})
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-h.done:
			case <-h.loss:
			case <-end:
				return
			case <-wctx.Done():
				return
			}
			cancel(lostPart(h.index))
		}()
	}
	return wctx, func() error {
		close(end)
		wg.Wait()
		cancel(nil)
		return firstLost(hs)
	}
}

// releaseSorted releases leases at once (leases[i] is of the lock at from+i in path
// order; nil: none) and joins the errors.
func (m *MultiLock) releaseSorted(ctx context.Context, leases []*mutex.Lease, from int) error {
	errs := make([]error, len(leases))
	each(len(leases), func(i int) {
		if l := leases[i]; l != nil {
			if err := l.Release(ctx); err != nil {
				errs[i] = fmt.Errorf("multilock: release lock %d: %w", m.sorted[from+i].index, err)
			}
		}
	})
	return errors.Join(errs...)
}

// each runs f(0) to f(n-1) at once, f(0) on the calling goroutine, and returns when all
// have: their requests go out together.
func each(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	if n > 0 {
		f(0)
	}
	wg.Wait()
}

// contextCarrier is a lease that can put itself into a context (so that a later
// acquisition of the same lock fails with ErrAlreadyHeld rather than deadlocking).
type contextCarrier interface {
	Context(parent context.Context) (context.Context, context.CancelFunc)
}

// releaseGot releases the locks an acquisition got before it failed, in reverse order.
// While ctx is live it waits for the releases (bounded by the cleanup timeout) and
// returns their errors. Once ctx ended, the caller must return promptly: the leases are
// released within locks.CancelGrace (a live connection answers by then, and the locks are
// free when Acquire returns), after which each hands its delete to the background (see
// Lease); nothing is reported.
func releaseGot(ctx context.Context, parts []Lease) error {
	if ctx.Err() != nil {
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), locks.CancelGrace)
		defer cancel()
		_ = releaseReverse(gctx, parts)
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	return releaseReverse(cctx, parts)
}

func releaseReverse(ctx context.Context, parts []Lease) error {
	var errs []error
	for i := len(parts) - 1; i >= 0; i-- {
		if err := parts[i].Release(ctx); err != nil {
			errs = append(errs, fmt.Errorf("multilock: release lock %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// MultiLease holds every lock of a MultiLock. Its methods are safe for concurrent use.
type MultiLease struct {
	parts    []Lease
	together bool // released all at once (NewFromPaths), not in reverse order
	once     sync.Once
	done     chan struct{}
	mu       sync.Mutex
	released chan struct{}
	wg       sync.WaitGroup
}

// watch closes done when any part ends or the multi-lease is released.
func (ml *MultiLease) watch() {
	for _, p := range ml.parts {
		ml.wg.Add(1)
		go func() {
			defer ml.wg.Done()
			select {
			case <-p.Done():
				ml.once.Do(func() { close(ml.done) })
			case <-ml.released:
			}
		}()
	}
}

// Release releases every lock, trying each one, and returns the errors joined: in reverse
// order for a multi-lock made by New, all at once for one made by NewFromPaths.
// Releasing twice returns ErrNotHeld.
func (ml *MultiLease) Release(ctx context.Context) error {
	ml.mu.Lock()
	select {
	case <-ml.released:
		ml.mu.Unlock()
		return ErrNotHeld
	default:
	}
	close(ml.released)
	ml.mu.Unlock()
	var err error
	if ml.together {
		errs := make([]error, len(ml.parts))
		each(len(ml.parts), func(i int) {
			if e := ml.parts[i].Release(ctx); e != nil {
				errs[i] = fmt.Errorf("multilock: release lock %d: %w", i, e)
			}
		})
		err = errors.Join(errs...)
	} else {
		err = releaseReverse(ctx, ml.parts)
	}
	ml.once.Do(func() { close(ml.done) })
	ml.wg.Wait()
	return err
}

// Done returns a channel closed when the multi-lease is released or any of its locks may
// have been lost.
func (ml *MultiLease) Done() <-chan struct{} { return ml.done }

// Parts returns the leases of the locks, in the order the locks were given.
func (ml *MultiLease) Parts() []Lease { return append([]Lease(nil), ml.parts...) }
