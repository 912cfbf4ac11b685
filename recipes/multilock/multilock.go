// Package multilock takes several locks as one (Curator's InterProcessMultiLock): any mix
// of mutexes, read or write locks and semaphore mutexes.
//
// Acquire takes the locks in the order given; if one fails or ctx ends, the ones taken
// are released in reverse order and the failure is reported, so it is all or none.
// Release gives them back in reverse order, trying every one, and joins the errors. The
// lease's Done closes when any part's lease may have been lost.
//
// Taking the same locks in the same order everywhere avoids deadlocks between
// multi-locks; this package does not reorder them.
// Requests: the sum of its locks' (a mutex each for NewFromPaths), nothing more.
package multilock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/mutex"
)

var (
	// ErrNoLocks is returned by New without locks.
	ErrNoLocks = errors.New("multilock: no locks")
	// ErrDuplicatePath is returned by NewFromPaths when a path appears twice.
	ErrDuplicatePath = errors.New("multilock: duplicate path")
	// ErrNotHeld is returned when releasing a multi-lease twice.
	ErrNotHeld = errors.New("multilock: not held")
)

const cleanupTimeout = 10 * time.Second

// Lease is what multilock needs of a lock's lease. The leases of mutex, rwlock and
// semaphore have this shape.
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
type MultiLock struct{ locks []Lock }

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
	for _, p := range paths {
		if seen[p] {
			return nil, fmt.Errorf("%w: %s", ErrDuplicatePath, p)
		}
		seen[p] = true
		m, err := mutex.New(c, p)
		if err != nil {
			return nil, fmt.Errorf("multilock: %w", err)
		}
		locks = append(locks, From(m.Acquire))
	}
	return New(locks...)
}

// Acquire takes every lock in order, blocking until all are held, ctx ends or one fails.
// On failure the locks taken are released in reverse order and nothing is held.
//
// A lease that can carry itself in a context (the leases of mutex, rwlock and semaphore
// have Context) is passed on to the acquisitions after it: a lock listed twice, or a read
// lock after the write lock of the same RWLock, fails at once with that recipe's
// ErrAlreadyHeld instead of waiting for itself forever (acquisitions never re-enter or
// downgrade through a context).
func (m *MultiLock) Acquire(ctx context.Context) (*MultiLease, error) {
	var parts []Lease
	acquireCtx := ctx
	var cancels []context.CancelFunc
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	for i, lock := range m.locks {
		l, err := lock(acquireCtx)
		if err == nil {
			if carrier, ok := l.(contextCarrier); ok {
				var cancel context.CancelFunc
				acquireCtx, cancel = carrier.Context(acquireCtx)
				cancels = append(cancels, cancel)
			}
		}
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			rerr := releaseReverse(cctx, parts)
			cancel()
			return nil, errors.Join(fmt.Errorf("multilock: lock %d: %w", i, err), rerr)
		}
		parts = append(parts, l)
	}
	ml := &MultiLease{parts: parts, done: make(chan struct{}), released: make(chan struct{})}
	ml.watch()
	return ml, nil
}

// contextCarrier is a lease that can put itself into a context (so that a later
// acquisition of the same lock fails with ErrAlreadyHeld rather than deadlocking).
type contextCarrier interface {
	Context(parent context.Context) (context.Context, context.CancelFunc)
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

// Release releases every lock in reverse order, trying each one, and returns the errors
// joined. Releasing twice returns ErrNotHeld.
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
	err := releaseReverse(ctx, ml.parts)
	ml.once.Do(func() { close(ml.done) })
	ml.wg.Wait()
	return err
}

// Done returns a channel closed when the multi-lease is released or any of its locks may
// have been lost.
func (ml *MultiLease) Done() <-chan struct{} { return ml.done }

// Parts returns the leases of the locks, in acquisition order.
func (ml *MultiLease) Parts() []Lease { return append([]Lease(nil), ml.parts...) }
