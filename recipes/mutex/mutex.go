package mutex

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
)

// lockName is the marker in lock node names, as Curator's.
const lockName = "lock-"

// RevokeData is what a revocation request writes into a holder's node.
const RevokeData = "__REVOKE__"

// Option configures a Mutex.
type Option func(*options)

type options struct {
	data     []byte
	onRevoke func(*Lease)
}

// WithNodeData sets the data written into each lock node. The default is none.
func WithNodeData(b []byte) Option {
	return func(o *options) { o.data = append([]byte(nil), b...) }
}

// WithRevocationListener makes the lock revocable: fn is called (on a goroutine of the
// lease) when someone asks the holder to let go, by writing __REVOKE__ into its node.
// Releasing is up to fn. The default is not revocable.
func WithRevocationListener(fn func(*Lease)) Option {
	return func(o *options) { o.onRevoke = fn }
}

// Mutex is a distributed re-entrant lock on one ZooKeeper path. It holds no
// per-acquisition state and is safe for concurrent use: goroutines that call Acquire on
// one Mutex contend as separate processes would.
type Mutex struct {
	client *framework.Client
	path   string
	opts   options
	lk     *locks.Internals
	held   atomic.Int64 // leases of this Mutex held in this process
}

// New returns a mutex on path. It checks its arguments (a nil client, an invalid path, node
// data over ZooKeeper's limit) but does not talk to ZooKeeper.
func New(c *framework.Client, path string, opts ...Option) (*Mutex, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	lk, err := locks.New(locks.Config{Client: c, Path: path, LockName: lockName, MaxLeases: 1, Data: o.data})
	if err != nil {
		return nil, fmt.Errorf("mutex: %w", err)
	}
	return &Mutex{client: c, path: path, opts: o, lk: lk}, nil
}

// Path returns the lock's path.
func (m *Mutex) Path() string { return m.path }

// Acquire blocks until this caller holds the lock, ctx ends or the client closes. A
// deadline on ctx is Curator's acquire(time, unit). On failure it returns the error
// (ctx.Err() wrapped, on cancellation) and leaves no node behind.
//
// If ctx carries a live lease of this Mutex (see Lease.Context), Acquire counts up that
// lease and returns it without a round trip.
func (m *Mutex) Acquire(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, false)
}

// TryAcquire takes the lock if nobody holds it, and returns ErrLocked at once otherwise.
func (m *Mutex) TryAcquire(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, true)
}

func (m *Mutex) acquire(ctx context.Context, try bool) (*Lease, error) {
	if l := leaseFrom(ctx, m); l != nil {
		if err := l.reenter(); err != nil {
			return nil, err
		}
		return l, nil
	}
	h, err := m.lk.Acquire(ctx, try)
	if errors.Is(err, locks.ErrLocked) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, m.path)
	}
	if err != nil {
		return nil, fmt.Errorf("mutex: acquire %s: %w", m.path, err)
	}
	m.held.Add(1)
	return newLease(m, h), nil
}

// IsAcquiredInThisProcess reports whether a lease of this Mutex is held (not released)
// in this process. It says nothing about whether the lease is still valid: see
// Lease.Done.
func (m *Mutex) IsAcquiredInThisProcess() bool { return m.held.Load() > 0 }

// Participants returns the paths of the lock nodes in lock order: the holder first,
// then the waiters.
func (m *Mutex) Participants(ctx context.Context) ([]string, error) {
	p, err := m.lk.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("mutex: participants of %s: %w", m.path, err)
	}
	return p, nil
}

// Revoke asks the holder of the lock node at nodePath to let go, by writing __REVOKE__
// into it (Curator's Revoker.attemptRevoke). Only a holder that made its lock revocable
// reacts. A node that no longer exists is not an error.
func Revoke(ctx context.Context, c *framework.Client, nodePath string) error {
	if c == nil {
		return fmt.Errorf("mutex: revoke: %w: nil client", framework.ErrInvalidArgument)
	}
	_, err := c.SetData(ctx, nodePath, []byte(RevokeData), -1)
	if err != nil && !errors.Is(err, framework.ErrNoNode) {
		return fmt.Errorf("mutex: revoke %s: %w", nodePath, err)
	}
	return nil
}
