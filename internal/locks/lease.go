package locks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrNotHeld is returned when releasing a lease that is already fully released.
	ErrNotHeld = sentinel.New("not held", framework.ErrNotHeld)
	// ErrLeaseLost is returned when a lease may have been lost before it was released.
	ErrLeaseLost = sentinel.New("lease lost", framework.ErrLost)
	// ErrReleased is the cause of a lease context's end when the lease was released.
	ErrReleased = errors.New("lease released")
)

// RevokeData is what a revocation request writes into a holder's node (Curator's
// Revoker).
const RevokeData = "__REVOKE__"

// Revoke asks the holder of the node at nodePath to let go, by writing RevokeData into
// it (Curator's Revoker.attemptRevoke). Only a holder that watches its node for that
// (a revocable lock, lease or leader) reacts. A node that no longer exists is not an
// error. Errors name the node; recipes add their own prefix.
func Revoke(ctx context.Context, c *framework.Client, nodePath string) error {
	if c == nil {
		return fmt.Errorf("revoke: %w: nil client", framework.ErrInvalidArgument)
	}
	_, err := c.SetData(ctx, nodePath, []byte(RevokeData), -1)
	if err != nil && !errors.Is(err, framework.ErrNoNode) {
		return fmt.Errorf("revoke %s: %w", nodePath, err)
	}
	return nil
}

// IsRevokeRequest reports whether data, read from a holder's node, asks it to let go.
func IsRevokeRequest(data []byte) bool { return string(data) == RevokeData }

// Lease is the part every recipe's lease shares: the node held, a re-entrancy count, the
// Done channel (closed on the last release or when the client's loss signal for the
// node's generation fires, or when the node is deleted by someone else), a watch on its
// node (a data watch; until the children change, the children watch of the listing that
// gave the lock, Held.watch) and an optional revocation listener. Safe for concurrent use.
type Lease struct {
	Held   *Held
	client *framework.Client
	loss   <-chan struct{}

	deleted atomic.Bool // the node was deleted by someone else (seen by its watch or a read)
	// deleting: the release's delete is about to be sent (set before it is); a node gone
	// after that may be gone by it.
	deleting atomic.Bool
	// arm is the lease's watch on its node: the current attempt to arm it, never nil.
	arm atomic.Pointer[arming]
	// heard is the mzxid of the last revocation request the lease heard (or, from
	// Held.revokeHeard, that the lease that handed the node over heard): a request whose
	// mzxid is not greater was answered already.
	heard atomic.Int64

	mu       sync.Mutex
	count    int
	released chan struct{} // closed by the last release
	done     chan struct{} // closed when released or possibly lost (finish)
	finished sync.Once     // closes done
	// lost: the lease ended lost (ErrLeaseLost), not released (ErrReleased); written
	// before done is closed. cause() makes the error only when asked for.
	lost bool
	// lostAtRelease: the lease was already lost at its last release; written before
	// released is closed.
	lostAtRelease bool
	since         time.Time // when it was acquired, for the lock observer
}

// arming is one attempt to arm the lease's watch on its node.
type arming struct {
	done chan struct{} // closed once the attempt is answered or given up
	// w is the armed watch (set before done closes; nil: not armed): a data watch on the
	// node, or (kids) the children watch on its parent that the listing which gave the
	// lock set (Held.watch).
	w    *framework.Watch
	kids bool
}

// armed returns an attempt that is over, with watch w (nil: none).
func armed(w *framework.Watch, kids bool) *arming {
	a := &arming{done: make(chan struct{}), w: w, kids: kids}
	close(a.done)
	return a
}

// endedLost says why the lease ended: released (false) when its last release came while
// it was not lost, otherwise lost (true). A loss that comes after the release (the client
// closing right after it) does not change what happened.
func (l *Lease) endedLost() bool {
	select {
	case <-l.released:
		return l.lostAtRelease
	default:
	}
	return true
}

// cause is why the lease ended, ErrReleased or ErrLeaseLost with the node's path; only
// once done is closed.
func (l *Lease) cause() error {
	if l.lost {
		return fmt.Errorf("%w: %s", ErrLeaseLost, l.Held.Path)
	}
	return fmt.Errorf("%w: %s", ErrReleased, l.Held.Path)
}

// NewLease starts a lease on h, counted once. The lease watches its node: a node deleted
// by someone else while held ends the lease lost — so does a read of its path that finds
// another node there (owned by another session, or of another czxid than the one its
// first read found: deleted and made again under the same name), and a release can tell its own delete
// from another's (see DeleteNode). When h carries the children watch of the listing that
// gave the lock (Held.watch; NewLease takes it from h), that watch speaks for the node
// until the children change, and only then does the lease read its node (one getData
// request with a watch, in the background); otherwise it reads it at once. When onRevoke
// is not nil, the lease reads its node at once in any case (a revocation may be written
// in it already) and calls onRevoke (on a new goroutine) when someone writes RevokeData
// into its node.
func NewLease(c *framework.Client, h *Held, onRevoke func()) *Lease {
	l := &Lease{
		Held:     h,
		client:   c,
		loss:     c.LossSignal(h.Gen),
		count:    1,
		since:    time.Now(),
		released: make(chan struct{}),
		done:     make(chan struct{}),
	}
	l.heard.Store(h.revokeHeard)
	early := h.watch
	h.watch = nil // the lease's own now; a copy of h handed over does not carry it
	if onRevoke != nil {
		early = nil // the node must be read: a revocation may be in it already
	}
	if early != nil {
		l.arm.Store(armed(early, true))
	} else {
		l.arm.Store(&arming{done: make(chan struct{})}) // the first read is sent at once
	}
	if !c.Go(func() { l.watch(onRevoke, early) }) {
		l.armOver()
		l.finish(true) // the client closed: the lease ends at once
	}
	return l
}

// finish ends the lease (closes done), lost or released, once: at its last release
// (End), or when its watch sees it lost, whichever comes first.
func (l *Lease) finish(lost bool) {
	l.finished.Do(func() {
		l.lost = lost
		close(l.done)
	})
}

// armOver records that the current attempt to arm the node's watch is over (not armed,
// unless its watch was set).
func (l *Lease) armOver() {
	a := l.arm.Load()
	select {
	case <-a.done:
	default:
		close(a.done)
	}
}

func (l *Lease) watch(onRevoke func(), early *framework.Watch) {
	defer func() { l.finish(l.endedLost()) }()
	defer l.armOver()
	revoke := early
	arm := func(a *arming) {
		revoke = nil
		for pause := 100 * time.Millisecond; ; pause = min(2*pause, 2*time.Second) {
			// A data watch, not exists: no watch is left behind when the node is gone. The
			// read ends when the lease may be lost (a suspension must end the lease at
			// once), not with its release: the release waits for its answer (DeleteNode).
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			stop := make(chan struct{})
			go func() {
				select {
				case <-l.loss:
				case <-stop:
				}
				cancel()
			}()
			l.arm.Store(a) // a release waits for this read's answer
			data, st, ch, err := l.client.GetDataW(ctx, l.Held.Path)
			if errors.Is(err, framework.ErrNoAuth) {
				// A node we may not read: most likely another client's, made at our path
				// with its own ACL. Exists needs no permission: it tells whose node it is.
				if st, err = l.client.Exists(ctx, l.Held.Path); err == nil && st == nil {
					err = framework.ErrNoNode
				} else if err == nil && l.ours(st) {
					err = framework.ErrNoAuth // ours, with its ACL changed: no watch; read again
				}
			}
			close(stop)
			cancel()
			if errors.Is(err, framework.ErrNoNode) || (err == nil && !l.ours(st)) {
				// Gone, or another node at its path (ours deleted and one of its name made
				// again, by another session): someone else deleted ours. A data watch set
				// on the other node stays until it changes or the session ends.
				l.nodeGone()
				close(a.done)
				return
			}
			if errors.Is(err, framework.ErrClosed) {
				return // the client closed: the lease ends with it
			}
			if err == nil {
				l.hear(onRevoke, data, st)
				revoke = ch
				a.w = ch
				close(a.done)
				return
			}
			close(a.done)                          // not armed: a release does not wait for the pause
			a = &arming{done: make(chan struct{})} // stored when its read is sent
			// Not read (a connection lost for longer than the read's bound, say): read
			// again after a pause, or the revocation would never be heard; until the
			// lease ends.
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-l.released:
				t.Stop()
				return
			case <-l.loss:
				t.Stop()
				return
			case <-l.client.Done():
				t.Stop()
				return
			}
		}
	}
	if revoke == nil {
		arm(l.arm.Load())
		if l.deleted.Load() {
			return
		}
	}
	for {
		select {
		case <-l.released:
			return
		case <-l.loss:
			return
		case <-revoke.Done():
			select {
			case <-l.released:
				return // our own delete fired it, perhaps: nothing to read any more
			default:
			}
			ev := revoke.Event()
			if ev.Type == zk.EventNotWatching {
				revoke = nil // the session ended: the loss signal follows
				continue
			}
			if ev.Type == zk.EventNodeDeleted {
				l.nodeGone() // the node, or (the listing's children watch) its parent
			} else {
				// The node's data, or (the listing's children watch) the children changed:
				// read the node again (or hear its revocation), with a data watch now. A
				// release waits for the answer (DeleteNode).
				a := &arming{done: make(chan struct{})}
				l.arm.Store(a)
				arm(a)
			}
			if l.deleted.Load() {
				return
			}
		}
	}
}

// hear calls onRevoke, when not nil, if data, read from the lease's node with Stat st, is
// a revocation request the lease is to hear: only a live lease hears one (not one
// released meanwhile), and not one it or its predecessor on the node (a local hand-over)
// heard already. It runs on a goroutine the client's Close waits for; a panic there is
// logged.
func (l *Lease) hear(onRevoke func(), data []byte, st *zk.Stat) {
	if onRevoke == nil || !IsRevokeRequest(data) || st.Mzxid <= l.heard.Load() || l.isReleased() {
		return
	}
	l.heard.Store(st.Mzxid)
	l.client.Go(func() {
		defer framework.LogPanic(l.client.Logger(), "revocation listener panicked", "component", "locks", "path", l.Held.Path)
		if !l.isReleased() {
			onRevoke()
		}
	})
}

// ours reports whether st, read at the lease's path, is the lease's node: owned by its
// session and, once its czxid is known (Held.czxid: read for a fencing token, or at the
// lease's first read of the node), created by the same transaction. A node deleted and made
// again at the path (by another session, or with the same name in one multi) is not. The
// first read that finds the node ours records its czxid, so later reads compare it.
func (l *Lease) ours(st *zk.Stat) bool {
	if st == nil || (l.Held.SessionID != 0 && st.EphemeralOwner != l.Held.SessionID) {
		return false
	}
	z := l.Held.czxid.Load()
	if z == 0 {
		l.Held.czxid.CompareAndSwap(0, st.Czxid)
		return true
	}
	return z == st.Czxid
}

// nodeGone records that the lease's node is gone before its release's delete was sent:
// it was deleted by someone else, and the lock may be someone else's now. A release that
// waits for the lease's read of its node (DeleteNode) learns so before it decides.
func (l *Lease) nodeGone() {
	if !l.deleting.Load() { // else our own delete, perhaps
		l.deleted.Store(true)
	}
}

// Czxid returns the czxid of the lease's node (Held.Czxid), the base of fencing tokens.
// Once Done is closed it fails with ErrLeaseLost: a token must not answer for a node that
// is released or may be lost, even when its czxid was read before.
func (l *Lease) Czxid(ctx context.Context) (int64, error) {
	if l.ended() {
		return 0, fmt.Errorf("%w: %s", ErrLeaseLost, l.Held.Path)
	}
	z, err := l.Held.Czxid(ctx, l.client)
	if err != nil {
		return 0, err
	}
	if l.ended() {
		return 0, fmt.Errorf("%w: %s", ErrLeaseLost, l.Held.Path)
	}
	return z, nil
}

// isReleased reports whether the lease was fully released (End).
func (l *Lease) isReleased() bool {
	select {
	case <-l.released:
		return true
	default:
		return false
	}
}

// ended reports whether the lease was fully released or Done is closed.
func (l *Lease) ended() bool {
	select {
	case <-l.done:
		return true
	case <-l.released:
		return true
	default:
		return false
	}
}

// Done is closed when the lease is released or may have been lost.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Lost reports whether the client's loss signal for the lease's generation fired, or the
// node was deleted by someone else while held (seen by the lease's watch on its node, or
// by the last release, which found it gone).
func (l *Lease) Lost() bool {
	if l.deleted.Load() {
		return true
	}
	select {
	case <-l.loss:
		return true
	default:
		return false
	}
}

// IsHeld reports whether the lease is held: acquired and not fully released (it may have
// been lost: see Lost).
func (l *Lease) IsHeld() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count > 0
}

// Live reports whether the lease is held and has not ended (Done is open).
func (l *Lease) Live() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count > 0 && !l.ended()
}

// LeaseKey is implemented by the context keys under which recipes put their leases
// (Lease.Context), so that WithoutLeases can hide them.
type LeaseKey interface{ IsLeaseKey() }

// WithoutLeases returns a context with ctx's values and cancellation, except that no
// lease put there by a recipe (a LeaseKey) is visible: for work that outlives, or runs
// apart from, the holder (a selector started from within a critical section).
func WithoutLeases(ctx context.Context) context.Context { return noLeases{ctx} }

type noLeases struct{ context.Context }

func (c noLeases) Value(key any) any {
	if _, ok := key.(LeaseKey); ok {
		return nil
	}
	return c.Context.Value(key)
}

// Reenter counts the lease up once more (re-entrant acquisition).
func (l *Lease) Reenter() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return fmt.Errorf("%w: %s", ErrNotHeld, l.Held.Path)
	}
	select {
	case <-l.done:
		return fmt.Errorf("%w: %s", ErrLeaseLost, l.Held.Path)
	default:
	}
	l.count++
	return nil
}

// End counts the lease down once. last is true when that was the last hold: the lease is
// then released (Done closes) and the caller must dispose of the node (DeleteNode, or hand
// it over). It fails with ErrNotHeld when nothing is held.
func (l *Lease) End() (last bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return false, fmt.Errorf("%w: %s", ErrNotHeld, l.Held.Path)
	}
	l.count--
	if l.count > 0 {
		return false, nil
	}
	l.lostAtRelease = l.Lost()
	close(l.released)
	// Done closes now, whatever the watch on the node is doing (a read in flight ends
	// with the release's delete or its own bound; the watch goroutine then leaves).
	l.finish(l.lostAtRelease)
	l.observeHold()
	return true, nil
}

// DeleteNode deletes the lease's node after its last release (guaranteed: a failed delete
// is retried in the background). It never deletes a node it cannot prove its own: when
// the lease saw its node deleted, or found another node at its path (another session's,
// or one of its czxid not the lease's), it deletes nothing and returns ErrLeaseLost. When
// the lease may have been lost by the loss signal at its last release (End), it still
// deletes the node — after a suspension or a simulated expiry the session may have
// survived and still own it — but only as this node (owned by this session, bound to its
// czxid: WithMaxCzxid; one more read when the lease never learnt the czxid), and returns
// ErrLeaseLost. A loss signal that fires
// during the release's own delete (the connection dropping while its reply is on the way)
// does not make a lease lost that was held when it was released: what counts is the state
// at the last release.
//
// A node gone before the delete was sent was deleted by someone else while the lease was
// held (with its parent, say): the lock may have been someone else's meanwhile, and it
// returns ErrLeaseLost. It knows so when the delete's first attempt finds no node, or when
// the lease's watch on its node saw it deleted before the delete was sent. A resent
// delete's "no node" (the first attempt's answer lost with the connection) is a release
// when the watch was armed and had not fired when the delete was sent: someone else's
// delete applied before ours would have been told to this session (the listing's children
// watch, which the lease may hold instead of a data watch, fires on it just as well) (before any later
// answer, or when the watch is set again after the reconnection) — except one applied in
// the moment between the last answer this session read and our delete, which cannot be
// told from ours. Without that evidence (the watch not armed: its read failed, or was
// still unanswered when the release's context ended) it returns an error matching
// framework.ErrUnknownOutcome: released, or lost, not known.
func (l *Lease) DeleteNode(ctx context.Context) error {
	watched := l.watched(ctx)
	if l.deleted.Load() {
		// Someone else deleted our node while the lease was held (or made another at its
		// path): whatever is at the path is not ours, and nothing is deleted.
		return fmt.Errorf("%w: %s", ErrLeaseLost, l.Held.Path)
	}
	lost := l.wasLostAtRelease()
	l.deleting.Store(true)
	var err error
	if lost {
		err = l.deleteOwn(ctx)
	} else {
		err = l.client.Delete(ctx, l.Held.Path, framework.Guaranteed(), l.ownedBy())
	}
	if errors.Is(err, framework.ErrNoNode) {
		switch {
		case l.Held.SessionID != 0 && l.client.SessionID() != l.Held.SessionID:
			// The delete went out on another session and found no node of the session
			// that made ours: that session expired (the node with it), or the node went;
			// nothing of ours is left, and the lock may have been someone else's meanwhile.
			l.deleted.Store(true)
			lost = true
		case !errors.Is(err, framework.ErrUnknownOutcome):
			l.deleted.Store(true) // gone before our delete: not released by us
			lost = true
		case !lost && !watched:
			return fmt.Errorf("%s: released or lost, not known (the resent delete found no node; nothing shows whether its first attempt or someone else deleted it): %w", l.Held.Path, err)
		}
		err = nil
	}
	if lost {
		lost := fmt.Errorf("%w: %s", ErrLeaseLost, l.Held.Path)
		if err != nil && !errors.Is(err, framework.ErrClosed) {
			return errors.Join(lost, err)
		}
		return lost
	}
	return err
}

// deleteOwn deletes the lease's node, lost by the loss signal (it may still be this
// session's), only as this node: bound to its czxid (WithMaxCzxid), read first (one
// request) when the lease never learnt it, and then only if this session owns the node at
// the path; a node found not ours is left alone (ErrNoNode). When that read gets no answer
// (the connection is still down, ctx ended) the delete is guaranteed and reads the node
// again first, deleting it only if the lease's session owns it (by name alone when that
// session is not known: the protected name, a fresh UUID, is then the proof left), so
// that the node does not outlive the release while the session survives.
func (l *Lease) deleteOwn(ctx context.Context) error {
	z := l.Held.czxid.Load()
	if z == 0 {
		st, err := l.client.Exists(ctx, l.Held.Path)
		if err != nil {
			if errors.Is(err, framework.ErrClosed) {
				return err
			}
			if l.Held.SessionID != 0 {
				// Any czxid: the delete reads the node again first, for its owner.
				return l.client.Delete(ctx, l.Held.Path, framework.Guaranteed(), framework.WithMaxCzxid(math.MaxInt64), l.ownedBy())
			}
			return l.client.Delete(ctx, l.Held.Path, framework.Guaranteed())
		}
		if st == nil || (l.Held.SessionID != 0 && st.EphemeralOwner != l.Held.SessionID) {
			return fmt.Errorf("%s: %w", l.Held.Path, framework.ErrNoNode)
		}
		z = st.Czxid
	}
	return l.client.Delete(ctx, l.Held.Path, framework.Guaranteed(), framework.WithMaxCzxid(z), l.ownedBy())
}

// ownedBy binds a delete of the lease's node to the session that made it (when known):
// sent on another session, it deletes the node only if that session still owns it (the
// client gave it up, the server holds it); once that session has expired, its node is
// gone and whatever is at the path is another's.
func (l *Lease) ownedBy() framework.DeleteOption {
	if l.Held.SessionID == 0 {
		return nil
	}
	return framework.OwnedBy(l.Held.SessionID)
}

// watched reports whether the lease's watch speaks for its node now, before the release's
// delete is sent: armed and not fired. A read of the node in flight (the first, sent
// right after the acquisition, or one after the watch fired) is waited for, until ctx
// ends. When the listing's children watch (Held.watch) fired because the children
// changed and the lease did not read its node since (it ends with its release), the node
// is read here (one request). A watch that saw the node deleted records that someone
// else deleted it.
func (l *Lease) watched(ctx context.Context) bool {
	a := l.arm.Load()
	select {
	case <-a.done:
	case <-ctx.Done():
		return false
	}
	if a.w == nil {
		return false
	}
	select {
	case <-a.w.Done():
	default:
		return true
	}
	switch ev := a.w.Event(); {
	case ev.Type == zk.EventNodeDeleted:
		l.deleted.Store(true) // deleted (or its parent) before our delete was sent: not by us
		return false
	case !a.kids || ev.Type != zk.EventNodeChildrenChanged:
		return false
	}
	if b := l.arm.Load(); b != a {
		return l.watched(ctx) // the lease is reading its node again: wait for that
	}
	_, st, w, err := l.client.GetDataW(ctx, l.Held.Path)
	if errors.Is(err, framework.ErrNoNode) || (err == nil && !l.ours(st)) {
		l.deleted.Store(true) // gone, or another node at its path: not ours to delete
		return false
	}
	return err == nil && w != nil // not fired yet: it fires with our delete at the latest
}

// HeldNow reports whether the lease's node is still its own as of now at the quorum, for
// a release that would hand it to a local waiter instead of deleting it: an admission,
// which must not rest on a stale read (a follower cut off from its peers, or a delete's
// event still on its way). It syncs the session's server with the leader first: a server
// fires the watches of every change it applied before it answers the sync, and the
// client tells a watch's event before the replies that follow it, so that the lease's
// watch on its node, armed and not fired once the sync is answered, proves that nobody
// deleted the node before the sync (one request). Without such a watch (not armed, or
// fired by a change of the node's data), the node is read after the sync, bound to its
// owner session and czxid (one request more). kids, when not nil, is a children watch on
// the node's parent still not fired after the sync, set by a listing that showed the node
// alone: the lease's own (KidsWatch), or extra (a listing the caller made). A node found
// gone or not ours is recorded (the release then returns ErrLeaseLost); on any error it
// reports false.
func (l *Lease) HeldNow(ctx context.Context, extra *framework.Watch) (held bool, kids *framework.Watch) {
	if l.Lost() {
		return false, nil
	}
	if err := l.client.Sync(ctx, l.Held.Path); err != nil {
		return false, nil
	}
	if extra != nil {
		select {
		case <-extra.Done():
			extra = nil // the children changed since that listing
		default:
		}
	}
	a := l.arm.Load()
	select {
	case <-a.done:
	case <-ctx.Done():
		return false, nil
	}
	if a.w != nil {
		select {
		case <-a.w.Done():
			if a.w.Event().Type == zk.EventNodeDeleted {
				l.deleted.Store(true) // the node, or (the children watch) its parent
				return false, nil
			}
		default:
			if l.Lost() {
				return false, nil
			}
			if a.kids && l.Held.Behind == 0 {
				return true, a.w
			}
			return true, extra
		}
	}
	st, err := l.client.Exists(ctx, l.Held.Path)
	if err != nil {
		return false, nil
	}
	if st == nil || !l.ours(st) {
		l.deleted.Store(true)
		return false, nil
	}
	return !l.Lost(), extra
}

// HandOver returns the node as the lease that takes it over (a local hand-over, after
// this lease's last release) sees it: a copy of Held without the children watch, carrying
// the revocation requests this lease heard, which the next lease does not hear again
// (one not heard yet, its event on the way, is heard by the next holder).
func (l *Lease) HandOver() *Held {
	h := *l.Held
	h.watch = nil
	h.revokeHeard = l.heard.Load()
	return &h
}

// KidsWatch returns the children watch of the listing that gave the lock (or that handed
// it over), which speaks for the node, when it showed nobody behind it and has not fired;
// nil otherwise.
func (l *Lease) KidsWatch() *framework.Watch {
	a := l.arm.Load()
	select {
	case <-a.done:
	default:
		return nil
	}
	if !a.kids || a.w == nil || l.Held.Behind != 0 {
		return nil
	}
	select {
	case <-a.w.Done():
		return nil
	default:
		return a.w
	}
}

// wasLostAtRelease reports whether the lease was lost at its last release (End); before
// that, whether it is lost now.
func (l *Lease) wasLostAtRelease() bool {
	select {
	case <-l.released:
		return l.lostAtRelease
	default:
		return l.Lost()
	}
}

// Release counts the lease down once and, on the last release, deletes its node
// (DeleteNode). Errors name the node; recipes add their own prefix.
func (l *Lease) Release(ctx context.Context) error {
	last, err := l.End()
	if err != nil || !last {
		return err
	}
	return l.DeleteNode(ctx)
}

// Context returns a context derived from parent that carries value under key (recipes
// put their lease there, for re-entrancy) and is cancelled when the lease ends, with the
// cause ErrReleased or ErrLeaseLost. On an ended lease it is cancelled before it is
// returned.
func (l *Lease) Context(parent context.Context, key, value any) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, key, value))
	stop := func() { cancel(context.Canceled) }
	select {
	case <-l.done:
		cancel(l.cause())
		return ctx, stop
	case <-l.released:
		cancel(fmt.Errorf("%w: %s", ErrReleased, l.Held.Path))
		return ctx, stop
	default:
	}
	go func() {
		select {
		case <-l.done:
			cancel(l.cause())
		case <-ctx.Done():
		}
	}()
	return ctx, stop
}
