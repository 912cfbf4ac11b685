package mutex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
)

// lockName is the marker in lock node names, as Curator's.
const lockName = "lock-"

// RevokeData is what a revocation request writes into a holder's node.
const RevokeData = locks.RevokeData

// Option configures a Mutex.
type Option func(*options)

type options struct {
	data       []byte
	onRevoke   func(*Lease)
	localQueue bool
	localBatch int
}

// maxHandovers bounds how often one lock node is handed from goroutine to goroutine; the
// token reserves 8 bits for it.
const maxHandovers = 255

// WithNodeData sets the data written into each lock node (empty: none). The default is
// what Curator writes by default: the host's IP address, as text.
func WithNodeData(b []byte) Option {
	return func(o *options) { o.data = append([]byte{}, b...) }
}

// WithRevocationListener makes the lock revocable: fn is called (on a goroutine of the
// lease) when someone asks the holder to let go, by writing __REVOKE__ into its node.
// Releasing is up to fn; a panic in fn is logged (at Error, on the client's logger) and the
// process goes on. The default is not revocable. Only a live lease hears requests: once
// its Done has closed (under the standard error policy, as soon as the connection is
// suspended) fn is not called, even for a request written before, so code holding a
// revocable lock releases it when Done closes. Under SessionErrorPolicy a request missed
// while disconnected is heard once the connection is back. A request is heard once: a
// local waiter the node is handed to (WithLocalQueue) does not hear again one its
// predecessor heard, only requests written later.
func WithRevocationListener(fn func(*Lease)) Option {
	return func(o *options) { o.onRevoke = fn }
}

// WithLocalQueue says whether goroutines acquiring through this Mutex value queue
// in-process first, so that only one of them at a time has a node in ZooKeeper (the
// "hot-spot lock"): fewer nodes, watches and round trips for a lock that one process
// takes often. When a lease is released, the next local waiter gets the lock without a
// new node if no other process is waiting; when one is, the node is deleted and that
// process goes first, so the lock stays fair between processes. The default is on. Off,
// every Acquire creates its own node, as Curator's InterProcessMutex does per thread.
func WithLocalQueue(on bool) Option { return func(o *options) { o.localQueue = on } }

// WithLocalBatch lets this process hand the lock to up to k of its own queued goroutines
// in a row (the first holder included) before it lets a waiting process in: throughput
// over strict fairness, the trade Java's non-fair locks make. It implies the local queue.
// The default, 1, is fair: a local hand-over happens only when no other process waits.
// k must be between 1 and 255.
func WithLocalBatch(k int) Option {
	return func(o *options) { o.localBatch = k; o.localQueue = true }
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

	lq      sync.Mutex
	busy    bool      // a goroutine of this value acquires in ZooKeeper or holds the lock
	waiters []*waiter // local FIFO behind it
}

// waiter is a goroutine queued locally. It receives a lease handed over, or nil: its turn
// to acquire in ZooKeeper.
type waiter struct{ ch chan *Lease }

// New returns a mutex on path. It checks its arguments (a nil client, an invalid path, node
// data over ZooKeeper's limit) but does not talk to ZooKeeper.
func New(c *framework.Client, path string, opts ...Option) (*Mutex, error) {
	o := options{localQueue: true, localBatch: 1}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.localBatch < 1 || o.localBatch > maxHandovers {
		return nil, fmt.Errorf("mutex: %w: local batch %d not in [1, %d]", framework.ErrInvalidArgument, o.localBatch, maxHandovers)
	}
	lk, err := locks.New(locks.Config{Client: c, Path: path, LockName: lockName, MaxLeases: 1, Data: o.data, FastHandoff: true})
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
// Acquire never re-enters: if ctx carries a live lease of this Mutex (Lease.Context), it
// fails at once with ErrAlreadyHeld (re-enter with Lease.Reenter). A context carrying an
// ended lease is ignored.
func (m *Mutex) Acquire(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, false)
}

// TryAcquire takes the lock if nobody holds it, and returns ErrLocked at once otherwise.
// Like Acquire, it fails with ErrAlreadyHeld when ctx carries a live lease of this Mutex.
func (m *Mutex) TryAcquire(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, true)
}

func (m *Mutex) acquire(ctx context.Context, try bool) (*Lease, error) {
	if l := leaseFrom(ctx, m); l != nil && l.core.Live() {
		return nil, fmt.Errorf("%w: %s", ErrAlreadyHeld, m.path)
	}
	// An acquisition settled here, not in ZooKeeper, is reported to the lock observer as
	// any other (one in ZooKeeper is reported by the lock internals).
	start := time.Now()
	if m.opts.localQueue {
		l, err := m.queue(ctx, try)
		if l != nil || err != nil {
			locks.ObserveWait(m.client, "mutex", m.path, start, err)
			return l, err
		}
		// Our turn to acquire in ZooKeeper.
	}
	if err := ctx.Err(); err != nil {
		m.passTurn()
		err = fmt.Errorf("mutex: acquire %s: %w", m.path, err)
		locks.ObserveWait(m.client, "mutex", m.path, start, err)
		return nil, err
	}
	h, err := m.lk.Acquire(ctx, try)
	if err != nil {
		m.passTurn()
		if errors.Is(err, locks.ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, m.path)
		}
		return nil, fmt.Errorf("mutex: acquire %s: %w", m.path, err)
	}
	m.held.Add(1)
	return newLease(m, h, 0), nil
}

// queue waits in the local queue. It returns a lease handed over, an error, or neither:
// the caller's turn to acquire in ZooKeeper.
func (m *Mutex) queue(ctx context.Context, try bool) (*Lease, error) {
	m.lq.Lock()
	if !m.busy {
		m.busy = true
		m.lq.Unlock()
		return nil, nil
	}
	if try {
		m.lq.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrLocked, m.path)
	}
	w := &waiter{ch: make(chan *Lease, 1)}
	m.waiters = append(m.waiters, w)
	m.lq.Unlock()
	var stop error
	select {
	case l := <-w.ch:
		return l, nil
	case <-ctx.Done():
		stop = ctx.Err()
	case <-m.client.Done():
		stop = framework.ErrClosed
	}
	m.lq.Lock()
	for i, x := range m.waiters {
		if x == w {
			m.waiters = append(m.waiters[:i:i], m.waiters[i+1:]...)
			m.lq.Unlock()
			return nil, fmt.Errorf("mutex: acquire %s: %w", m.path, stop)
		}
	}
	m.lq.Unlock()
	// We were handed something just as we gave up: pass it on.
	if l := <-w.ch; l != nil {
		locks.Cleanup(ctx, m.client, func(cctx context.Context) { _ = l.Release(cctx) })
	} else {
		m.passTurn()
	}
	return nil, fmt.Errorf("mutex: acquire %s: %w", m.path, stop)
}

// passTurn gives up this goroutine's turn without a lease: the next local waiter acquires
// in ZooKeeper, or the value goes idle.
func (m *Mutex) passTurn() {
	if !m.opts.localQueue {
		return
	}
	m.lq.Lock()
	defer m.lq.Unlock()
	if len(m.waiters) > 0 {
		w := m.waiters[0]
		m.waiters = m.waiters[1:]
		w.ch <- nil
		return
	}
	m.busy = false
}

// handover gives a lease on node h to the next local waiter, if there is one.
func (m *Mutex) handover(h *locks.Held, index int) bool {
	m.lq.Lock()
	defer m.lq.Unlock()
	if len(m.waiters) == 0 {
		return false
	}
	w := m.waiters[0]
	m.waiters = m.waiters[1:]
	w.ch <- newLease(m, h, index)
	return true
}

func (m *Mutex) hasLocalWaiter() bool {
	m.lq.Lock()
	defer m.lq.Unlock()
	return len(m.waiters) > 0
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
	if err := locks.Revoke(ctx, c, nodePath); err != nil {
		return fmt.Errorf("mutex: %w", err)
	}
	return nil
}
