package mutex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
)

const cleanupTimeout = 10 * time.Second

// Lease is one holding of a Mutex. Its methods are safe for concurrent use.
type Lease struct {
	m     *Mutex
	held  *locks.Held
	index int             // how often the node was handed over before this lease
	loss  <-chan struct{} // the client's loss signal for the lease's generation

	mu       sync.Mutex
	count    int
	released chan struct{} // closed by the last Release
	done     chan struct{} // closed when released or possibly lost
}

func newLease(m *Mutex, h *locks.Held, index int) *Lease {
	l := &Lease{
		m:        m,
		held:     h,
		index:    index,
		loss:     m.client.LossSignal(h.Gen),
		count:    1,
		released: make(chan struct{}),
		done:     make(chan struct{}),
	}
	go l.watch()
	return l
}

// watch closes done when the lease ends, and serves revocation requests.
func (l *Lease) watch() {
	defer close(l.done)
	var revoke <-chan framework.Event
	arm := func() {
		if l.m.opts.onRevoke == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		data, _, ch, err := l.m.client.GetDataW(ctx, l.held.Path)
		if err != nil {
			revoke = nil
			return
		}
		if string(data) == RevokeData {
			go l.m.opts.onRevoke(l)
		}
		revoke = ch
	}
	arm()
	for {
		select {
		case <-l.released:
			return
		case <-l.loss:
			return
		case ev, ok := <-revoke:
			if !ok || ev.Type == zk.EventNotWatching {
				revoke = nil // the session ended: the loss signal follows
				continue
			}
			arm()
		}
	}
}

func (l *Lease) reenter() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return fmt.Errorf("%w: %s", ErrNotHeld, l.held.Path)
	}
	select {
	case <-l.done:
		return fmt.Errorf("%w: %s", ErrLeaseLost, l.held.Path)
	default:
	}
	l.count++
	return nil
}

// Release gives the lease back: with re-entrant holds, the node goes with the last
// release. Releasing more often than acquiring returns ErrNotHeld. When the lease may
// have been lost before it was released, Release still removes the node if this session
// still owns it, never anyone else's, and returns ErrLeaseLost.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.count == 0 {
		l.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotHeld, l.held.Path)
	}
	l.count--
	if l.count > 0 {
		l.mu.Unlock()
		return nil
	}
	lost := false
	select {
	case <-l.loss:
		lost = true
	default:
	}
	close(l.released)
	l.mu.Unlock()

	if !lost && l.m.opts.localQueue && l.index < maxHandovers && l.m.hasLocalWaiter() && l.mayHandOver(ctx) {
		select {
		case <-l.loss:
		default:
			if l.m.handover(l.next(), l.index+1) {
				return nil
			}
		}
	}
	defer l.m.passTurn()
	l.m.held.Add(-1)

	c := l.m.client
	if lost {
		// Delete the node only if our session still owns it (after a simulated loss it
		// may); otherwise it is gone or, impossibly, someone else's.
		st, err := c.Exists(ctx, l.held.Path)
		if err == nil && st != nil && st.EphemeralOwner == l.held.SessionID && st.Czxid == l.held.Czxid {
			err = l.m.lk.Release(ctx, l.held.Path)
		}
		if err != nil && !errors.Is(err, framework.ErrClosed) {
			return errors.Join(fmt.Errorf("%w: %s", ErrLeaseLost, l.held.Path), err)
		}
		return fmt.Errorf("%w: %s", ErrLeaseLost, l.held.Path)
	}
	if err := l.m.lk.Release(ctx, l.held.Path); err != nil {
		return fmt.Errorf("mutex: release %s: %w", l.held.Path, err)
	}
	return nil
}

// mayHandOver decides whether the next local waiter may take the node over: within the
// local batch always, beyond it only when no other process waits.
func (l *Lease) mayHandOver(ctx context.Context) bool {
	if l.index+1 < l.m.opts.localBatch {
		return true
	}
	if l.held.Behind > 0 {
		return false // others queued behind us when we got the lock
	}
	others, err := l.m.lk.OthersWaiting(ctx)
	return err == nil && !others
}

// next is the node as the next holder sees it: nobody known behind it when the last
// check said so.
func (l *Lease) next() *locks.Held {
	h := *l.held
	if l.index+1 >= l.m.opts.localBatch {
		h.Behind = 0
	}
	return &h
}

// Done returns a channel that is closed when the lease is released or may have been
// lost (per the client's error policy; always when the session changes or the client
// closes). Critical work should stop when it closes.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Token returns the lease's fencing token. It strictly increases from one holder of the
// lock to the next, across the whole ensemble and every process: it is the lock node's
// czxid shifted left by 8 bits, plus the number of times the node was handed over locally
// before this lease (at most 255). A holder in another process always has a later node,
// so a larger czxid.
func (l *Lease) Token() int64 { return l.held.Czxid<<8 | int64(l.index) }

// Node returns the path of the lease's lock node.
func (l *Lease) Node() string { return l.held.Path }

type leaseKey struct{ m *Mutex }

// Context returns a context derived from parent that carries the lease (acquiring the
// same Mutex with it is re-entrant) and is cancelled when the lease ends (Done), so that
// work under the lock stops when the lock may be lost. Call cancel when done with it.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithValue(parent, leaseKey{l.m}, l))
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func leaseFrom(ctx context.Context, m *Mutex) *Lease {
	l, _ := ctx.Value(leaseKey{m}).(*Lease)
	return l
}
