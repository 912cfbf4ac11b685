package rwlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
)

// The two markers in node names, as Curator's.
const (
	writeName = "__WRIT__"
	readName  = "__READ__"
)

// Option configures a RWLock.
type Option func(*options)

type options struct{ data []byte }

// WithNodeData sets the data written into each lock node (empty: none). The default is
// what Curator writes by default: the host's IP address, as text.
func WithNodeData(b []byte) Option { return func(o *options) { o.data = append([]byte{}, b...) } }

// RWLock is a distributed read-write lock on one path. It is safe for concurrent use and
// holds no per-acquisition state.
type RWLock struct {
	client *framework.Client
	path   string
	write  *Lock
	read   *Lock
}

// Lock is one side of a RWLock: its write lock or its read lock.
type Lock struct {
	rw    *RWLock
	write bool
	lk    *locks.Internals
}

// sortKey sorts by the sequence after either marker; a downgrade reader, which shares
// its writer's sequence, sorts right after that writer.
func sortKey(name string) string {
	if i := strings.LastIndex(name, writeName); i >= 0 {
		return name[i+len(writeName):] + "0"
	}
	if i := strings.LastIndex(name, readName); i >= 0 {
		return name[i+len(readName):] + "1"
	}
	return name
}

// readPredicate: a reader holds when no writer precedes it, except its own writer (a
// writer with the same sequence: the downgrade case).
func readPredicate(sorted []string, ours, _ int) (bool, string, error) {
	ourSeq := framework.SequenceSuffix(sorted[ours], readName)
	for i := 0; i < ours; i++ {
		if strings.Contains(sorted[i], writeName) && framework.SequenceSuffix(sorted[i], writeName) != ourSeq {
			return false, sorted[i], nil
		}
	}
	return true, "", nil
}

// contender reports whether a child of the lock's path is a lock node, a writer's or a
// reader's: any other child is ignored.
func contender(name string) bool {
	return strings.Contains(name, writeName) || strings.Contains(name, readName)
}

// New returns a read-write lock on path. It checks its arguments but does not talk to
// ZooKeeper.
func New(c *framework.Client, path string, opts ...Option) (*RWLock, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	rw := &RWLock{client: c, path: path}
	wl, err := locks.New(locks.Config{Client: c, Path: path, LockName: writeName, MaxLeases: 1, Data: o.data, SortKey: sortKey, Contender: contender})
	if err != nil {
		return nil, fmt.Errorf("rwlock: %w", err)
	}
	rl, err := locks.New(locks.Config{Client: c, Path: path, LockName: readName, MaxLeases: math.MaxInt32, Data: o.data,
		SortKey: sortKey, Predicate: readPredicate, Contender: contender})
	if err != nil {
		return nil, fmt.Errorf("rwlock: %w", err)
	}
	rw.write = &Lock{rw: rw, write: true, lk: wl}
	rw.read = &Lock{rw: rw, lk: rl}
	return rw, nil
}

// WriteLock returns the write (exclusive) lock.
func (rw *RWLock) WriteLock() *Lock { return rw.write }

// ReadLock returns the read (shared) lock.
func (rw *RWLock) ReadLock() *Lock { return rw.read }

// Path returns the lock's path.
func (rw *RWLock) Path() string { return rw.path }

// Participants returns every lock node, readers and writers, in lock order.
func (rw *RWLock) Participants(ctx context.Context) ([]string, error) {
	p, err := rw.write.lk.Participants(ctx)
	if err != nil {
		return nil, fmt.Errorf("rwlock: participants of %s: %w", rw.path, err)
	}
	return p, nil
}

func (l *Lock) name() string {
	if l.write {
		return "write"
	}
	return "read"
}

// Participants returns this side's lock nodes (writers, or readers) in lock order, as
// Curator's readLock()/writeLock() participant lists do.
func (l *Lock) Participants(ctx context.Context) ([]string, error) {
	all, err := l.rw.Participants(ctx)
	if err != nil {
		return nil, err
	}
	marker := readName
	if l.write {
		marker = writeName
	}
	var out []string
	for _, p := range all {
		if strings.Contains(framework.NodeName(p), marker) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Acquire blocks until this side of the lock is held, ctx ends or the client closes. It
// never re-enters: with a context that carries a live lease of this RWLock on the same
// side, or a live write lease when asking for the read lock, it fails at once with
// ErrAlreadyHeld (re-enter with Lease.Reenter, downgrade with Lease.Downgrade). The write
// lock with a context that carries a live read lease fails with ErrUpgrade. A context
// carrying an ended lease is ignored. On failure no node is left.
func (l *Lock) Acquire(ctx context.Context) (*Lease, error) { return l.acquire(ctx, false) }

// TryAcquire is Acquire that returns ErrLocked at once when the lock cannot be had.
func (l *Lock) TryAcquire(ctx context.Context) (*Lease, error) { return l.acquire(ctx, true) }

func (l *Lock) acquire(ctx context.Context, try bool) (*Lease, error) {
	if own := leaseFrom(ctx, l); own != nil && own.core.Live() {
		return nil, fmt.Errorf("%w: %s lock of %s", ErrAlreadyHeld, l.name(), l.rw.path)
	}
	if l.write {
		if r := leaseFrom(ctx, l.rw.read); r != nil && r.core.Live() {
			return nil, fmt.Errorf("%w: %s", ErrUpgrade, l.rw.path)
		}
	} else if w := leaseFrom(ctx, l.rw.write); w != nil && w.core.Live() {
		return nil, fmt.Errorf("%w: write lock of %s (downgrade with Lease.Downgrade)", ErrAlreadyHeld, l.rw.path)
	}
	h, err := l.lk.Acquire(ctx, try)
	if errors.Is(err, locks.ErrLocked) {
		return nil, fmt.Errorf("%w: %s lock of %s", ErrLocked, l.name(), l.rw.path)
	}
	if err != nil {
		return nil, fmt.Errorf("rwlock: %s lock of %s: %w", l.name(), l.rw.path, err)
	}
	return &Lease{lock: l, core: locks.NewLease(l.rw.client, h, nil)}, nil
}

// Downgrade takes the read lock while this write lease holds the write lock, and returns
// the read lease: granted at once, whoever waits. Its node sorts right after the
// writer's, so that no writer queued behind this one gets in before the read lease is
// released, even once the write lease is. (A Curator 5.4 peer's downgrade makes an
// ordinary read node: a Go writer queued behind it may get in while its read lock is
// held.) It fails with ErrNotHeld on a read lease or a released one, and with ErrLeaseLost
// when the write lease may have been lost.
func (l *Lease) Downgrade(ctx context.Context) (*Lease, error) {
	if !l.lock.write {
		return nil, fmt.Errorf("rwlock: downgrade: %w: %s is a read lease", ErrNotHeld, l.Node())
	}
	if l.gone.Load() || !l.core.IsHeld() {
		return nil, fmt.Errorf("rwlock: downgrade: %w: %s", ErrNotHeld, l.Node())
	}
	r := l.lock.rw.read
	h, err := r.downgrade(ctx, false, l)
	if err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return nil, fmt.Errorf("rwlock: downgrade: %w", err)
		}
		return nil, fmt.Errorf("rwlock: downgrade %s: %w", l.Node(), err)
	}
	return &Lease{lock: r, core: locks.NewLease(r.rw.client, h, nil)}, nil
}

// Reenter re-enters this side of the lock through this lease, without a round trip: it
// returns another counted lease of the same holding (same node, Done and Token), to be
// released once like this one; the node goes with the last release. It fails with
// ErrNotHeld once the holding was fully released and ErrLeaseLost once it may have been
// lost.
func (l *Lease) Reenter() (*Lease, error) {
	if l.gone.Load() {
		return nil, fmt.Errorf("rwlock: reenter: %w: %s", ErrNotHeld, l.Node())
	}
	if err := l.core.Reenter(); err != nil {
		return nil, fmt.Errorf("rwlock: reenter: %w", err)
	}
	return &Lease{lock: l.lock, core: l.core}, nil
}

// downgrade takes the read lock while holding the write lease w: a plain node named after
// the writer's sequence number, which sorts right after the writer, so that no queued
// writer can slip in before the write lock is released. It holds only while the writer's
// node is there, in the writer's session, and it is never retried with a new node.
func (l *Lock) downgrade(ctx context.Context, try bool, w *Lease) (*locks.Held, error) {
	if w.core.Lost() {
		return nil, fmt.Errorf("%w: %s", ErrLeaseLost, w.Node())
	}
	writer := framework.NodeName(w.Node())
	seq := framework.SequenceSuffix(writer, writeName)
	pred := func(sorted []string, ours, max int) (bool, string, error) {
		if !slices.Contains(sorted, writer) {
			return false, "", fmt.Errorf("%w: %s", ErrLeaseLost, w.Node())
		}
		return readPredicate(sorted, ours, max)
	}
	return l.lk.AcquireSpec(ctx, try, locks.Spec{Name: readName + seq, Predicate: pred, Gen: w.core.Held.Gen, NoRetry: true})
}

// Lease is one holding of a read or write lock. Its methods are safe for concurrent use.
type Lease struct {
	lock *Lock
	core *locks.Lease
	gone atomic.Bool // this counted lease was released
}

// Release gives the lease back; each lease (Reenter's too) is released once, and the node
// goes with the last release. Releasing again returns ErrNotHeld; a lease that may have
// been lost returns ErrLeaseLost (after removing its node if this session still owns it),
// and so does one whose node someone else deleted while it was held. When the delete is
// resent after a lost connection and finds no node, and nothing shows whether its first
// attempt or someone else deleted it, it returns an error matching
// framework.ErrUnknownOutcome.
func (l *Lease) Release(ctx context.Context) error {
	if !l.gone.CompareAndSwap(false, true) {
		return fmt.Errorf("rwlock: release: %w: %s", ErrNotHeld, l.Node())
	}
	if err := l.core.Release(ctx); err != nil {
		return fmt.Errorf("rwlock: release: %w", err)
	}
	return nil
}

// Done returns a channel closed when the lease is released or may have been lost.
func (l *Lease) Done() <-chan struct{} { return l.core.Done() }

// Token returns a fencing token: the lock node's czxid shifted left by 8 bits (the same
// scale as the mutex's tokens). It strictly increases from one write holder to the next.
// The first call reads the czxid (one request); it fails with ErrLeaseLost when the node
// is no longer this session's.
func (l *Lease) Token(ctx context.Context) (int64, error) {
	z, err := l.core.Czxid(ctx)
	if err != nil {
		return 0, fmt.Errorf("rwlock: token of %s: %w", l.core.Held.Path, err)
	}
	return z << 8, nil
}

// Node returns the path of the lease's lock node.
func (l *Lease) Node() string { return l.core.Held.Path }

// IsWrite reports whether this is a write lease.
func (l *Lease) IsWrite() bool { return l.lock.write }

type leaseKey struct{ l *Lock }

// IsLeaseKey marks leaseKey as a lease's context key (locks.WithoutLeases).
func (leaseKey) IsLeaseKey() {}

// Context returns a context derived from parent that carries the lease (acquiring the
// same RWLock with it fails with ErrAlreadyHeld) and is cancelled when the lease ends.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return l.core.Context(parent, leaseKey{l.lock}, l)
}

// leaseFrom returns the lease of lock l that ctx carries, if any (held or not, lost or
// not: the caller decides).
func leaseFrom(ctx context.Context, l *Lock) *Lease {
	lease, _ := ctx.Value(leaseKey{l}).(*Lease)
	return lease
}
