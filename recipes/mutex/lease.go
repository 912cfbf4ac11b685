package mutex

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
)

// Lease is one holding of a Mutex. Its methods are safe for concurrent use.
type Lease struct {
	m     *Mutex
	core  *locks.Lease
	index int         // how often the node was handed over before this lease
	gone  atomic.Bool // this counted lease was released
}

func newLease(m *Mutex, h *locks.Held, index int) *Lease {
	l := &Lease{m: m, index: index}
	var onRevoke func()
	if fn := m.opts.onRevoke; fn != nil {
		onRevoke = func() { fn(l) }
	}
	l.core = locks.NewLease(m.client, h, onRevoke)
	return l
}

// Reenter re-enters the lock through this lease, without a round trip: it returns
// another counted lease of the same holding (same node, Done and Token), to be released
// once like this one; the node goes with the last release. It fails with ErrNotHeld once
// the holding was fully released and with ErrLeaseLost once it may have been lost.
//
// Re-entry goes through the lease only: Acquire with a context carrying the lease fails
// with ErrAlreadyHeld, since a context reaches every goroutine it is handed to.
func (l *Lease) Reenter() (*Lease, error) {
	if l.gone.Load() {
		return nil, fmt.Errorf("mutex: reenter: %w: %s", ErrNotHeld, l.core.Held.Path)
	}
	if err := l.core.Reenter(); err != nil {
		return nil, fmt.Errorf("mutex: reenter: %w", err)
	}
	return &Lease{m: l.m, core: l.core, index: l.index}, nil
}

// Release gives the lease back; each lease (Reenter's too) is released once, and the node
// goes with the last release. Releasing again returns ErrNotHeld. When the lease may
// have been lost before it was released, Release still removes the node if this session
// still owns it, never anyone else's, and returns ErrLeaseLost; so it does when the node
// was deleted by someone else while held (its parent deleted and made again, say), and
// then it hands nothing to a local waiter: the lock was not this holder's to hand on.
// When the release's delete is resent after a lost connection and finds no node, and
// nothing shows whether its first attempt or someone else deleted it (the lease's watch
// on its node was not armed), it returns an error matching framework.ErrUnknownOutcome.
func (l *Lease) Release(ctx context.Context) error {
	if !l.gone.CompareAndSwap(false, true) {
		return fmt.Errorf("mutex: release: %w: %s", ErrNotHeld, l.core.Held.Path)
	}
	last, err := l.core.End()
	if err != nil {
		return fmt.Errorf("mutex: release: %w", err)
	}
	if !last {
		return nil
	}
	if !l.core.Lost() && l.m.opts.localQueue && l.index < maxHandovers && l.m.hasLocalWaiter() {
		if ok, w := l.mayHandOver(ctx); ok && !l.core.Lost() && l.m.handover(l.next(w), l.index+1) {
			return nil
		}
	}
	defer l.m.passTurn()
	l.m.held.Add(-1)
	if err := l.core.DeleteNode(ctx); err != nil {
		return fmt.Errorf("mutex: release: %w", err)
	}
	return nil
}

// mayHandOver decides whether the next local waiter may take the node over: within the
// local batch whenever the node is still ours, beyond it only when, besides, no other
// process waits. Both rest on a fresh read (locks.Lease.HeldNow: a sync, after which the
// lease's watch on its node speaks for it), never on what this client last heard: a
// node deleted by someone else, its event not heard yet, or a follower cut off from its
// peers still showing it, is never handed on. Beyond the batch, nobody else waits when a
// children watch set by a listing that showed our node alone has not fired by the time
// the sync is answered: the lease's own, or one set by a listing made here (before the
// sync: one that shows others ends it without a sync). w is that watch: the next holder
// takes it, so that neither a read of its node nor a listing is needed until the
// children change.
func (l *Lease) mayHandOver(ctx context.Context) (ok bool, w *framework.Watch) {
	within := l.index+1 < l.m.opts.localBatch
	var listed *framework.Watch
	if !within {
		if l.core.Held.Behind > 0 {
			return false, nil // others queued behind us when we got the lock
		}
		if l.core.KidsWatch() == nil {
			others, lw, err := l.m.lk.OthersWaiting(ctx, l.core.Held.Path)
			if err != nil || others {
				return false, nil
			}
			listed = lw
		}
	}
	held, kids := l.core.HeldNow(ctx, listed)
	if !held || (!within && kids == nil) {
		return false, nil // lost, or (beyond the batch) the children changed since the listing
	}
	return true, kids
}

// next is the node as the next holder sees it: nobody known behind it when the last
// check said so, with the children watch w of the listing that showed it (nil: none),
// and without the revocation requests this lease heard (locks.Lease.HandOver).
func (l *Lease) next(w *framework.Watch) *locks.Held {
	h := l.core.HandOver()
	if l.index+1 >= l.m.opts.localBatch {
		h.Behind = 0
	}
	return h.WithWatch(w)
}

// Done returns a channel that is closed when the lease is released or may have been
// lost (per the client's error policy; always when the session changes or the client
// closes; for a revocable lock, also when someone else deletes its node: Release then
// reports ErrLeaseLost). Critical work should stop when it closes.
func (l *Lease) Done() <-chan struct{} { return l.core.Done() }

// Token returns the lease's fencing token. It strictly increases from one holder of the
// lock to the next, across the whole ensemble and every process: it is the lock node's
// czxid shifted left by 8 bits, plus the number of times the node was handed over locally
// before this lease (at most 255). A holder in another process always has a later node,
// so a larger czxid. The first call reads the czxid from ZooKeeper (one request; later
// calls and locally handed-over leases reuse it), so that acquisitions that never fence
// do not pay for it. It fails with ErrLeaseLost when the node is no longer this session's.
func (l *Lease) Token(ctx context.Context) (int64, error) {
	z, err := l.core.Czxid(ctx)
	if err != nil {
		return 0, fmt.Errorf("mutex: token of %s: %w", l.core.Held.Path, err)
	}
	return z<<8 | int64(l.index), nil
}

// Node returns the path of the lease's lock node.
func (l *Lease) Node() string { return l.core.Held.Path }

type leaseKey struct{ m *Mutex }

// IsLeaseKey marks leaseKey as a lease's context key (locks.WithoutLeases).
func (leaseKey) IsLeaseKey() {}

// Context returns a context derived from parent that carries the lease (acquiring the
// same Mutex with it fails with ErrAlreadyHeld, not to let in every goroutine it reaches;
// re-enter with Reenter) and is cancelled when the lease ends (Done), so that
// work under the lock stops when the lock may be lost. Its context.Cause says why:
// ErrReleased or ErrLeaseLost. On an ended lease it is cancelled before it is returned.
// Call cancel when done with it.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return l.core.Context(parent, leaseKey{l.m}, l)
}

func leaseFrom(ctx context.Context, m *Mutex) *Lease {
	l, _ := ctx.Value(leaseKey{m}).(*Lease)
	return l
}
