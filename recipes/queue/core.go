package queue

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/grace"
	"github.com/zoocurator/zoocurator/internal/locks"
)

const (
	// cleanupTimeout bounds the work done after the caller's context ended: finishing a
	// node whose handler already ran, deleting a lock node of ours.
	cleanupTimeout = 30 * time.Second
	// retryPause is how long Consume waits after a ZooKeeper error before it looks at
	// the queue again (the client's retry policy has already been applied).
	retryPause = 250 * time.Millisecond
	// takeOutcomeWait bounds how long a take whose context ended while its delete was in
	// flight waits for the delete's answer (framework.AwaitOutcome).
	takeOutcomeWait = 10 * time.Second
	// removeOutcomeWait is IDQueue.Remove's: it returns with its context, a delete then in
	// flight reported as such (an outcome unknown). framework.AwaitOutcome needs a
	// positive wait to tell that.
	removeOutcomeWait = time.Millisecond
)

// takeDelete deletes the item node p just read with Stat st, bound to that node
// (framework.AsRead: its version now, its czxid on a resend, which must not delete a node
// made since at the same name after the queue was deleted and made again), and says
// whether it was applied (nil), not applied (NoNode or BadVersion: another consumer took
// it; ctx's error) or unknown (framework.ErrUnknownOutcome): see framework.AwaitOutcome.
// Applied after ctx ended is applied: the item is the caller's. A delete applied while
// the queue path was deleted and made again since the read (a first attempt is bound to
// the node's version only, and a new item at the reused name has the same) is unknown
// too: see notRemade. It waits at most await past ctx in all (positive: see
// framework.AwaitOutcome), for the delete's answer and the read that follows it together.
func takeDelete(ctx context.Context, c *framework.Client, p string, st *framework.Stat, await time.Duration) error {
	gctx, gcancel := grace.After(ctx, await)
	defer gcancel()
	err := c.Delete(ctx, p, framework.AsRead(st), framework.AwaitOutcome(await))
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(gctx, takeOutcomeWait)
	defer cancel()
	if err := notRemade(cctx, c, parentOf(p), st.Czxid); err != nil {
		if errors.Is(err, errQueueUnread) {
			// Applied, and the queue path could not be read to tell it from a remade
			// queue: the item is delivered. That cannot deliver anything twice (were the
			// queue made again, the item read went with the old queue, never delivered),
			// whereas reporting it unknown would lose the item in the common case.
			return nil
		}
		if ctx.Err() != nil {
			return errors.Join(err, ctx.Err()) // as AwaitOutcome's unknown outcome
		}
		return err
	}
	return nil
}

// notRemade is called once a delete of the item node that had czxid (or a transaction
// with it) was applied, by the version read. A multi cannot check a czxid: when the
// queue path was deleted and made again between that read and the delete, with a new
// item at the same name (sequence numbers start again; version 0 like the old item), the
// delete removed the new item. Then the queue path, made after the item, has a later
// czxid than it: notRemade returns an error matching framework.ErrUnknownOutcome, as it
// does when it cannot read the queue path. It costs a read per take. A queue path made
// again just after the delete says the same (that cannot be told apart): the item may be
// gone, not delivered. A queue path gone is taken for one deleted after the delete (a
// container queue path the server removes once the take emptied it, the common case):
// left is a queue path deleted, made again with a new item at the name, that item taken
// by the delete, and the queue path deleted again, all before the read.
func notRemade(ctx context.Context, c *framework.Client, queuePath string, czxid int64) error {
	st, err := stat(ctx, c, queuePath)
	if err != nil {
		return fmt.Errorf("%w: %w: %w", framework.ErrUnknownOutcome, errQueueUnread, err)
	}
	if st != nil && st.Czxid > czxid {
		return fmt.Errorf("%w: the queue path was deleted and made again while the item was being removed: the removal may have deleted a new item at its reused name", framework.ErrUnknownOutcome)
	}
	return nil
}

// parentOf returns the parent of the node path p (not the root).
func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Handler handles one item. With a lock path, the item's node is removed only after the
// handler returned (requeued instead, in ErrorMode Requeue, when it returned an error).
// The context is the one given to Consume or ConsumeOne; with a lock path, a consumer
// whose context ended before the handler would run on the first of a node's items gives
// the node back untouched (its lock node deleted, the node where it was, no attempt
// counted) and returns the context's error; one whose context ended after the handler
// ran on some of the items of a node (PutMulti) puts the rest back as a new node at the
// queue's tail, in one transaction with the node's removal, and returns the context's
// error (matching ErrNotRemoved too when that transaction could not be made: the whole
// node may then be delivered again). Without a lock path the node is
// removed first, and the handler gets every item whose removal the server applied, also
// when that context ended while the removal was in flight (the context has then ended:
// the item is gone from the queue and the handler is its only holder). A panic in the
// handler is recovered: it counts as the handler's error (a *HandlerError whose Err is a
// *PanicError), and the item is released as any failed one.
type Handler[T any] func(ctx context.Context, item T) error

// base is what the four distributed queues share.
type base[T any] struct {
	c    *framework.Client
	path string
	ser  Serializer[T]
	kind kind
	o    options

	pathReady atomic.Bool
	lockReady atomic.Bool
	deadReady atomic.Bool

	contention atomic.Int32 // takes left during which a node gone when read counts as a lost race

	// left is what ConsumeOne's last listing had after the node it took, for the next
	// ConsumeOne to work through before it lists again (queues ordered by sequence only:
	// a node created since sorts after all of them). Nil when there is none, or while a
	// ConsumeOne works through it.
	leftMu    sync.Mutex
	left      []string
	leftZxid  int64    // the queue node's pzxid when left was listed
	leftLocks lockWait // the lock nodes of items passed over before left, watched

	// requeues counts, per item a consumer of this value requeued (by its name prefix
	// and data), its handler's failures in a row (see noteRequeue). When a consumer's next
	// take may start is its own (each Consume or ConsumeOne call's hold).
	requeueMu sync.Mutex
	requeues  map[[32]byte]int
}

// The back-off of a requeued item: the consumer that requeued it waits requeueBackoff
// before its next take, doubling with each failure of the same item in a row, up to
// maxRequeueBackoff. maxRequeued bounds the items remembered.
const (
	requeueBackoff    = 100 * time.Millisecond
	maxRequeueBackoff = 5 * time.Second
	maxRequeued       = 1024
)

// noteRequeue records the outcome of a handled item (its node name and data): a success
// forgets its failures; a requeue counts one more and sets *hold (the consumer's own: one
// Consume or ConsumeOne call's) to when its next take may start, after the item's
// back-off.
func (b *base[T]) noteRequeue(name string, data []byte, requeued bool, hold *time.Time) {
	key := requeueKey(name, data)
	b.requeueMu.Lock()
	defer b.requeueMu.Unlock()
	if !requeued {
		delete(b.requeues, key)
		return
	}
	if b.requeues == nil || len(b.requeues) >= maxRequeued {
		b.requeues = map[[32]byte]int{}
	}
	n := b.requeues[key] + 1
	b.requeues[key] = n
	d := maxRequeueBackoff
	if n <= 16 {
		d = min(requeueBackoff<<(n-1), maxRequeueBackoff)
	}
	if hold != nil {
		*hold = time.Now().Add(d)
	}
}

// requeueKey is an item's identity across its requeues (each makes a new node): its node
// name without the sequence number, and its data.
func requeueKey(name string, data []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(requeuePrefix(name)))
	h.Write([]byte{0})
	h.Write(data)
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// failures returns how many times in a row a consumer of this value requeued the item
// (its node name and data) after its handler failed.
func (b *base[T]) failures(name string, data []byte) int {
	key := requeueKey(name, data)
	b.requeueMu.Lock()
	defer b.requeueMu.Unlock()
	return b.requeues[key]
}

// waitHold waits (honouring ctx) until hold, when the consumer may take again after a
// requeue.
func (b *base[T]) waitHold(ctx context.Context, hold time.Time) error {
	d := time.Until(hold)
	if d <= 0 {
		return nil
	}
	return b.pause(ctx, d)
}

type outcome int

const (
	skipped outcome = iota // not ours: taken by another consumer, gone, not due, bad
	taken                  // the handler was called
	gone                   // taken by another consumer while we were taking it (our versioned delete lost)
	stale                  // created after the listing that named it: the queue was made again
	missing                // gone when read (taken by another consumer, or removed)
)

// contendedTakes is how many takes after a lost race a node gone when read is also taken
// for a lost race (see consume): consumers racing for the queue find most nodes of their
// listings gone when they read them, and jump past those too; a lone consumer loses no
// race and never jumps.
const contendedTakes = 16

// maxJump bounds how many nodes a consumer that keeps losing races jumps over; maxAhead
// is how many nodes of a listing ConsumeOne keeps after it jumped over some, so that
// those it jumped over (if no other consumer took them) come back with the listing after
// at most that many takes.
const (
	maxJump  = 8
	maxAhead = 32
)

func newBase[T any](c *framework.Client, path string, ser Serializer[T], k kind, opts []Option) (*base[T], error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	if ser == nil {
		return nil, ErrNilSerializer
	}
	if err := checkPath("queue", path); err != nil {
		return nil, err
	}
	b := &base[T]{c: c, path: path, ser: ser, kind: k}
	for _, opt := range opts {
		if opt != nil {
			opt(&b.o)
		}
	}
	if b.o.lockPath != "" {
		if err := checkPath("lock", b.o.lockPath); err != nil {
			return nil, err
		}
		if b.o.lockPath == path {
			return nil, fmt.Errorf("%w: the lock path cannot be the queue path", ErrInvalidArgument)
		}
	}
	if b.o.maxItems < 0 {
		return nil, fmt.Errorf("%w: maxItems %d", ErrInvalidArgument, b.o.maxItems)
	}
	if b.o.errorMode != Requeue && b.o.errorMode != Delete {
		return nil, fmt.Errorf("%w: error mode %d", ErrInvalidArgument, b.o.errorMode)
	}
	if b.o.maxAttemptsSet {
		switch {
		case b.o.maxAttempts < 1:
			return nil, fmt.Errorf("%w: max attempts %d (at least 1)", ErrInvalidArgument, b.o.maxAttempts)
		case b.o.lockPath == "":
			return nil, fmt.Errorf("%w: max attempts without a lock path (the item is removed before its handler runs)", ErrInvalidArgument)
		case b.o.errorMode != Requeue:
			return nil, fmt.Errorf("%w: max attempts with ErrorMode Delete (a failed item is removed at once)", ErrInvalidArgument)
		}
	}
	if b.o.deadLetterSet {
		if !b.o.maxAttemptsSet {
			return nil, fmt.Errorf("%w: a dead-letter path without WithMaxAttempts", ErrInvalidArgument)
		}
		if err := checkPath("dead-letter", b.o.deadLetter); err != nil {
			return nil, err
		}
		if b.o.deadLetter == path || b.o.deadLetter == b.o.lockPath {
			return nil, fmt.Errorf("%w: the dead-letter path cannot be the queue path or the lock path", ErrInvalidArgument)
		}
	}
	return b, nil
}

// checkPath refuses a path ZooKeeper would refuse, the root and /zookeeper.
func checkPath(what, p string) error {
	if err := framework.ValidatePath(p); err != nil {
		return fmt.Errorf("%w: %s path: %w", ErrInvalidArgument, what, err)
	}
	if p == "/" || framework.IsReservedPath(p) {
		return fmt.Errorf("%w: %s path %s is the root or reserved", ErrInvalidArgument, what, p)
	}
	return nil
}

// ensure creates p (persistent, its parents as containers) once, as Curator's queue does
// at start for the queue and lock paths. Under a guard (framework.WithGuard) the creates
// are guarded: none is made once the guard no longer holds (framework.ErrFenced); the
// parents are then persistent nodes, not containers (a transaction cannot make one).
func (b *base[T]) ensure(ctx context.Context, p string, done *atomic.Bool) error {
	if done.Load() {
		return nil
	}
	var err error
	if g, ok := framework.GuardFrom(ctx); ok {
		err = b.c.GuardedEnsure(ctx, g, p)
	} else {
		_, err = b.c.Create(ctx, p, nil, framework.WithContainerParents())
	}
	if err != nil && !errors.Is(err, framework.ErrNodeExists) {
		return err
	}
	done.Store(true)
	return nil
}

// put writes one node named prefix<seq> holding payloads.
func (b *base[T]) put(ctx context.Context, name string, items []T) (string, error) {
	if len(items) == 0 {
		return "", fmt.Errorf("%w: no items", ErrInvalidArgument)
	}
	payloads := make([][]byte, len(items))
	for i, it := range items {
		p, err := b.ser.Serialize(it)
		if err != nil {
			return "", fmt.Errorf("queue: serialize item %d: %w", i, err)
		}
		payloads[i] = p
	}
	data := EncodeItems(payloads)
	itemPath := framework.JoinPath(b.path, name)
	if err := b.c.CheckDataSize(itemPath+"0000000000", len(data)); err != nil {
		return "", fmt.Errorf("queue: put: %w", err)
	}
	if g, ok := framework.GuardFrom(ctx); ok {
		if err := g.Check(); err != nil { // ended: make nothing, not even the queue path
			return "", fmt.Errorf("queue: put: %w", err)
		}
	}
	if err := b.ensure(ctx, b.path, &b.pathReady); err != nil {
		return "", err
	}
	if b.o.maxItems > 0 {
		if err := b.waitRoom(ctx); err != nil {
			return "", err
		}
	}
	return createCounted(ctx, b.c, itemPath, data, func(ctx context.Context) error {
		b.pathReady.Store(false)
		return b.ensure(ctx, b.path, &b.pathReady)
	})
}

// createCounted creates a persistent sequential node. When the queue path is missing it
// calls ensure and tries once more. A create of which an attempt may have been applied
// unanswered (framework.WithResent: a connection loss, or a wait given up, while it was
// in flight) is reported with ErrMaybeTwice next to the path it made. That holds across
// the second try too: a resend answered NoNode may follow a first attempt that made the
// item, which was then taken and the queue path deleted (emptied by a consumer, reaped
// as a container); the item made after ensure is then its second.
func createCounted(ctx context.Context, c *framework.Client, p string, data []byte, ensure func(context.Context) error) (string, error) {
	if g, ok := framework.GuardFrom(ctx); ok {
		return createGuarded(ctx, c, g, p, data, ensure) // guard.go
	}
	var resent, resentAgain bool
	mode := framework.WithMode(framework.PersistentSequential)
	got, err := c.Create(ctx, p, data, mode, framework.WithResent(&resent))
	if errors.Is(err, framework.ErrNoNode) && !errors.Is(err, framework.ErrUnknownOutcome) {
		if err = ensure(ctx); err != nil {
			return "", err
		}
		got, err = c.Create(ctx, p, data, mode, framework.WithResent(&resentAgain))
	}
	if err != nil {
		return "", err
	}
	if resent || resentAgain {
		return got, fmt.Errorf("%w (%w)", ErrMaybeTwice, framework.ErrUnknownOutcome)
	}
	return got, nil
}

// waitRoom waits until the queue path has fewer than maxItems children. A queue path
// deleted since it was made is made again, as a Put without WithMaxItems does.
func (b *base[T]) waitRoom(ctx context.Context) error {
	for {
		kids, _, w, err := b.c.ChildrenW(ctx, b.path)
		if errors.Is(err, framework.ErrNoNode) {
			b.pathReady.Store(false)
			if err := b.ensure(ctx, b.path, &b.pathReady); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if len(kids) < b.o.maxItems {
			return nil
		}
		select {
		case <-w.Done():
		case <-ctx.Done():
			return ctx.Err()
		case <-b.c.Done():
			return framework.ErrClosed
		}
	}
}

// names returns the item nodes in the order they are consumed; foreign children
// (without the "queue-" prefix) are left out.
func (b *base[T]) names(ctx context.Context, watch bool) ([]string, *framework.Watch, error) {
	names, w, _, err := b.namesZxid(ctx, watch)
	return names, w, err
}

// namesZxid is names, with the queue node's pzxid (0 without a watch): a node it lists
// was created at or before it.
func (b *base[T]) namesZxid(ctx context.Context, watch bool) ([]string, *framework.Watch, int64, error) {
	var kids []string
	var w *framework.Watch
	var pzxid int64
	var err error
	if watch {
		var st *framework.Stat
		kids, st, w, err = b.c.ChildrenW(ctx, b.path)
		if st != nil {
			pzxid = st.Pzxid
		}
	} else {
		kids, _, err = b.c.Children(ctx, b.path)
	}
	if errors.Is(err, framework.ErrNoNode) {
		b.pathReady.Store(false)
		if !watch { // a listing: no queue, no items
			return nil, nil, 0, nil
		}
		if err = b.ensure(ctx, b.path, &b.pathReady); err != nil {
			return nil, nil, 0, err
		}
		return b.namesZxid(ctx, watch)
	}
	if err != nil {
		return nil, nil, 0, err
	}
	out := kids[:0]
	for _, k := range kids {
		if strings.HasPrefix(k, itemPrefix) {
			out = append(out, k)
		}
	}
	b.kind.sortNames(out)
	return out, w, pzxid, nil
}

// items returns the names of the queue's item nodes in the order consumers take them.
func (b *base[T]) items(ctx context.Context) ([]string, error) {
	names, _, err := b.names(ctx, false)
	return names, err
}

// decode turns node data into items; its error is a *BadItemError.
// st is the node's Stat as read with data: the error carries its czxid.
func (b *base[T]) decode(name string, data []byte, st *framework.Stat) ([]T, error) {
	payloads, err := DecodeItems(data)
	if err == nil {
		items := make([]T, 0, len(payloads))
		for i, p := range payloads {
			it, derr := b.ser.Deserialize(p)
			if derr != nil {
				err = fmt.Errorf("%w: item %d: %w", ErrNotAnItem, i, derr)
				break
			}
			items = append(items, it)
		}
		if err == nil {
			return items, nil
		}
	}
	return nil, &BadItemError{Path: framework.JoinPath(b.path, name), Err: err, node: versionOf(st)}
}

// handle runs h on each item; it stops at the first error in Requeue mode. A panic in h
// is recovered and counts as h's error (see callHandler). With a lock path it never runs
// h with an ended context: it stops before the next item once ctx ended, and done, fewer
// than the items, says how many it ran h on (the rest is then given back).
func (b *base[T]) handle(ctx context.Context, items []T, h Handler[T]) (done int, err error) {
	var errs []error
	for i, it := range items {
		if b.o.lockPath != "" && ctx.Err() != nil {
			return i, errors.Join(errs...)
		}
		if err := callHandler(ctx, h, it); err != nil {
			errs = append(errs, err)
			if b.o.lockPath != "" && b.o.errorMode == Requeue {
				break
			}
		}
	}
	return len(items), errors.Join(errs...)
}

// callHandler calls h on item and turns a panic in it into a *PanicError (with the
// panic's value and stack): the item is then released as a failed one, rather than left
// locked with its consumer's goroutine gone.
func callHandler[T any](ctx context.Context, h Handler[T], item T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return h(ctx, item)
}

// lockWait is the lock nodes held by other consumers and the watches on them (any of
// them going, when its consumer finished or died, may make an item available again);
// gone says one vanished before its watch was set.
type lockWait struct {
	ws    []*framework.Watch
	items []string // the item node of each watch's lock node
	locks []string // the lock node of each watch that is a watch on its parent's children, or ""
	gone  bool
}

// add records the watch w on the lock node of the item node item; lock is the lock
// node's path when w watches the lock path's children instead ("": w watches its data).
func (lw *lockWait) add(w *framework.Watch, item, lock string) {
	lw.ws = append(lw.ws, w)
	lw.items = append(lw.items, item)
	lw.locks = append(lw.locks, lock)
}

// watch watches the lock node at lockPath, held by another consumer, of the item node
// itemPath: a data watch, which leaves nothing behind when the node is gone already. A
// lock node this client may not read (another client's ACL: NoAuth) cannot be watched:
// the server tells a watch's events only to a client that may read the node (an exists
// watch on it is set but never fires). The lock path's children, which we read, are
// watched then: the lock node's delete fires that watch (as does any other lock node
// made or deleted, after which freed looks again). A lock node gone before its watch was
// set sets gone.
func (lw *lockWait) watch(ctx context.Context, c *framework.Client, lockPath, itemPath string) {
	_, _, w, err := c.GetDataW(ctx, lockPath)
	if err == nil {
		lw.add(w, itemPath, "")
		return
	}
	if errors.Is(err, framework.ErrNoAuth) {
		var there bool
		w, there, err = watchByParent(ctx, c, lockPath)
		if err == nil && there {
			lw.add(w, itemPath, lockPath)
			return
		}
		if err == nil {
			err = framework.ErrNoNode // gone since: the children watch fires at the next change
		}
	}
	if errors.Is(err, framework.ErrNoNode) {
		lw.gone = true
	}
}

// watchByParent watches the children of p's parent, and reports whether p is among them.
func watchByParent(ctx context.Context, c *framework.Client, p string) (*framework.Watch, bool, error) {
	kids, _, w, err := c.ChildrenW(ctx, parentOf(p))
	if err != nil {
		return nil, false, err
	}
	return w, slices.Contains(kids, framework.NodeName(p)), nil
}

// freed reports whether an item whose lock node was watched is free: its lock node went
// and the item is still there (its holder died, or gave it back). A lock node that went
// with its item (the holder finished it: the common case) is forgotten, so that
// consumers busy beside each other do not list the queue again after every item. A
// read that fails says yes: the caller lists again. So does a lock node gone before its
// watch was set (gone): its item may be free since, and no watch tells.
func (lw *lockWait) freed(ctx context.Context, c *framework.Client) bool {
	if lw.gone {
		return true
	}
	for i := 0; i < len(lw.ws); i++ {
		select {
		case <-lw.ws[i].Done():
		default:
			continue
		}
		if lw.locks[i] != "" {
			// A watch on the lock path's children: fired by any lock node's change.
			w, there, err := watchByParent(ctx, c, lw.locks[i])
			if err != nil {
				return true
			}
			if there {
				lw.ws[i] = w // still held: wait on
				continue
			}
		}
		st, err := stat(ctx, c, lw.items[i])
		if err != nil || st != nil {
			return true
		}
		lw.ws = append(lw.ws[:i:i], lw.ws[i+1:]...)
		lw.items = append(lw.items[:i:i], lw.items[i+1:]...)
		lw.locks = append(lw.locks[:i:i], lw.locks[i+1:]...)
		i--
	}
	return false
}

// wake returns a channel that gets a value when any of the watches fired, and a func
// that ends the goroutines forwarding them.
func (lw *lockWait) wake() (<-chan struct{}, func()) {
	if len(lw.ws) == 0 {
		return nil, func() {}
	}
	woke := make(chan struct{}, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range lw.ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-w.Done():
				select {
				case woke <- struct{}{}:
				default:
				}
			case <-stop:
			}
		}()
	}
	return woke, func() { close(stop); wg.Wait() }
}

// process takes the node name: handles its items and removes (or requeues) it.
// listZxid (0: no check) is the queue node's pzxid when name was listed: a node created
// after it is not the one listed but a new one at a reused name (the queue was deleted
// and made again, and its sequence numbers started again): stale.
func (b *base[T]) process(ctx context.Context, name string, h Handler[T], lw *lockWait, listZxid int64, hold *time.Time) (outcome, error) {
	if b.o.lockPath != "" {
		return b.processLocked(ctx, name, h, lw, listZxid, hold)
	}
	itemPath := framework.JoinPath(b.path, name)
	data, st, err := b.c.GetData(ctx, itemPath)
	if errors.Is(err, framework.ErrNoNode) {
		// Not proof of a race with another consumer: IDQueue.Remove, or anyone, may have
		// deleted it since the listing (kept since the last ConsumeOne, perhaps long ago).
		// No jump unless races were lost lately: a lone consumer keeps the queue's order.
		return missing, nil
	}
	if err != nil {
		return skipped, err
	}
	if listZxid > 0 && st.Czxid > listZxid {
		return stale, nil
	}
	items, err := b.decode(name, data, st)
	if err != nil {
		return skipped, err
	}
	err = takeDelete(ctx, b.c, itemPath, st, takeOutcomeWait)
	switch {
	case err == nil:
		// Ours, also when ctx ended while the delete was in flight: the handler gets it.
	case errors.Is(err, framework.ErrUnknownOutcome):
		// Perhaps ours (its answer lost), perhaps another consumer's (a resend answered
		// NoNode): never delivered on a guess, which could make it twice.
		return skipped, &MaybeGoneError{Path: itemPath, Err: err}
	case errors.Is(err, framework.ErrNoNode), errors.Is(err, framework.ErrBadVersion):
		return gone, nil // another consumer got it
	default:
		return skipped, err
	}
	if _, herr := b.handle(ctx, items, h); herr != nil {
		return taken, &HandlerError{Path: itemPath, Err: herr}
	}
	return taken, nil
}

// processLocked is process with Curator's lock safety.
func (b *base[T]) processLocked(ctx context.Context, name string, h Handler[T], lw *lockWait, listZxid int64, hold *time.Time) (outcome, error) {
	if err := b.ensure(ctx, b.o.lockPath, &b.lockReady); err != nil {
		return skipped, err
	}
	itemPath := framework.JoinPath(b.path, name)
	lockPath := framework.JoinPath(b.o.lockPath, name)
	lockGen, lockSid := b.c.Session() // read first: a lock node made later is of this session or a newer one
	tok := newLockToken()
	ours, err := b.lock(ctx, lockPath, tok)
	if err != nil || !ours {
		if err == nil && lw != nil && !lw.gone {
			// Held by another consumer: wake when it lets go (or its session ends).
			lw.watch(ctx, b.c, lockPath, itemPath)
		}
		return skipped, err
	}
	data, st, err := b.c.GetData(ctx, itemPath)
	if err != nil {
		b.unlock(ctx, lockPath, tok)
		if errors.Is(err, framework.ErrNoNode) {
			return skipped, nil
		}
		return skipped, err
	}
	if listZxid > 0 && st.Czxid > listZxid {
		b.unlock(ctx, lockPath, tok)
		return stale, nil
	}
	items, err := b.decode(name, data, st)
	if err != nil {
		b.unlock(ctx, lockPath, tok)
		return skipped, err
	}
	done, herr := b.handle(ctx, items, h)
	if done == 0 && len(items) > 0 {
		// Ended before the handler ran on any of the node's items: the node goes back
		// untouched (where it is, no attempt counted), not handled with an ended
		// context and failed.
		b.unlock(ctx, lockPath, tok)
		return skipped, ctx.Err()
	}
	if done < len(items) {
		return taken, b.giveBackRest(ctx, name, data, st.Czxid, done, herr, lockGen, lockSid, tok)
	}
	requeue := herr != nil && b.o.errorMode == Requeue
	var dest string // where the transaction makes the node again ("": nowhere)
	var he *HandlerError
	if herr != nil {
		he = &HandlerError{Path: itemPath, Err: herr}
	}
	if requeue {
		dest = framework.JoinPath(b.path, requeuePrefix(name))
		if b.o.maxAttempts > 0 {
			he.Attempts = b.failures(name, data) + 1
			if he.Attempts >= b.o.maxAttempts {
				// Given up: to the dead-letter path, or left where it is.
				requeue, he.GaveUp = false, true
				b.noteRequeue(name, data, false, nil) // the count starts again
				if b.o.deadLetter == "" {
					b.unlock(ctx, lockPath, tok)
					return taken, he
				}
				dest = framework.JoinPath(b.o.deadLetter, requeuePrefix(name))
			}
		}
	}
	created, err := b.finishCancellable(ctx, removal{name: name, data: data, czxid: st.Czxid, dest: dest, lockGen: lockGen, lockSid: lockSid, tok: tok})
	if errors.Is(err, errRemovedMeanwhile) {
		// Removed by someone without the lock while the handler ran: nothing was moved,
		// requeued or removed by us, and there is nothing left to count or back off for.
		b.noteRequeue(name, data, false, nil)
		if he != nil {
			he.RemovedByOther = true
			return taken, he
		}
		return taken, nil
	}
	if err != nil {
		if he != nil {
			// Both: the removal's error and the handler's, as the *HandlerError it is
			// reported as otherwise (requeued or moved when the transaction was applied:
			// a *MaybeGoneError says so).
			he.noteRemovalError(err, requeue)
			return taken, errors.Join(err, he)
		}
		return taken, err
	}
	if herr == nil || requeue {
		b.noteRequeue(name, data, requeue, hold)
	}
	if he != nil {
		he.Requeued, he.DeadLettered = requeue, he.GaveUp
		if he.GaveUp {
			he.DeadLetterNode = created
		}
		return taken, he
	}
	return taken, nil
}

// giveBackRest ends a node of several items (PutMulti) whose consumer's context ended
// after the handler ran on the first done of them: the items not handled go back as a
// new node at the queue's tail (the node's name without its sequence, as a requeue), in
// one transaction with the removal of the node and of its lock node, so that no item is
// lost and none handled is delivered again. The error always carries ctx's; when the
// transaction was not applied, or may not have been, it also matches ErrNotRemoved (the
// whole node, the items handled with it, may be delivered again) or ErrMaybeGone.
// Handler errors (not Requeue mode: those items count as done) are joined as a
// *HandlerError.
func (b *base[T]) giveBackRest(ctx context.Context, name string, data []byte, czxid int64, done int, herr error, lockGen uint64, lockSid int64, tok []byte) error {
	itemPath := framework.JoinPath(b.path, name)
	var he error
	if herr != nil {
		he = &HandlerError{Path: itemPath, Err: herr}
	}
	payloads, err := DecodeItems(data) // decoded before the handler ran: it does not fail
	if err != nil || done >= len(payloads) {
		b.unlock(ctx, framework.JoinPath(b.o.lockPath, name), tok)
		return errors.Join(ctx.Err(), &NotRemovedError{Path: itemPath, Reason: fmt.Sprintf("the consumer stopped after %d of its items; the node is back whole", done), Err: err}, he)
	}
	_, err = b.finishCancellable(ctx, removal{name: name, data: EncodeItems(payloads[done:]), czxid: czxid,
		dest: framework.JoinPath(b.path, requeuePrefix(name)), lockGen: lockGen, lockSid: lockSid, tok: tok})
	switch {
	case err == nil, errors.Is(err, errRemovedMeanwhile):
		// The rest is back (or the node was removed by someone without the lock).
		return errors.Join(ctx.Err(), he)
	case errors.Is(err, ErrNotRemoved), errors.Is(err, ErrMaybeGone):
		return errors.Join(ctx.Err(), err, he)
	default:
		return errors.Join(ctx.Err(), &NotRemovedError{Path: itemPath, Reason: fmt.Sprintf("the consumer stopped after %d of its items; the rest was not given back", done), Err: err}, he)
	}
}

// newLockToken returns the data of a new lock node: a random token that tells this
// attempt's node from one a sibling consumer on the same client (same session) made.
// Curator ignores a lock node's data.
func newLockToken() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return []byte("zoocurator-queue-lock:" + hex.EncodeToString(b))
}

// lock creates the ephemeral lock node holding tok; ours is false when another consumer
// holds it.
func (b *base[T]) lock(ctx context.Context, lockPath string, tok []byte) (ours bool, err error) {
	var creates framework.InFlight // a create given up may still be sent and applied
	_, err = b.c.Create(ctx, lockPath, tok, framework.WithMode(framework.Ephemeral), framework.WithInFlight(&creates))
	if errors.Is(err, framework.ErrNoNode) && !errors.Is(err, framework.ErrUnknownOutcome) {
		b.lockReady.Store(false)
		if err = b.ensure(ctx, b.o.lockPath, &b.lockReady); err != nil {
			return false, err
		}
		_, err = b.c.Create(ctx, lockPath, tok, framework.WithMode(framework.Ephemeral), framework.WithInFlight(&creates))
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, framework.ErrNodeExists) && !errors.Is(err, framework.ErrUnknownOutcome):
		return false, nil
	case errors.Is(err, framework.ErrNodeExists):
		// Resent after a connection loss: ours if our session owns it with our token.
		ours, err := b.ownLock(ctx, lockPath, tok)
		if err != nil {
			// Not known whether it is ours (the read failed, ctx ended): the create was
			// answered, so the background clean-up can look at once, as for an
			// unknown create.
			b.unlockInBackground(ctx, lockPath, tok)
		}
		return ours, err
	}
	// The create may have been applied (the context ended while it was in flight):
	// remove the lock node if it is ours, looking only once the create was answered (a
	// look sent at once may overtake it, find nothing, and the create land after). That
	// is done in the background (framework.Client.GoCleanup, which WaitGuaranteedDeletes
	// counts), bounded by the clean-up timeout: the caller returns at once.
	b.c.GoCleanup(func() {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		_ = creates.Wait(wctx)
		cancel()
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		b.unlockNow(uctx, lockPath, tok)
	})
	return false, err
}

// ownLock reports whether the lock node exists, belongs to our session and holds tok
// (a sibling consumer on the same client has the same session, not the same token).
func (b *base[T]) ownLock(ctx context.Context, lockPath string, tok []byte) (bool, error) {
	st, err := b.ownLockStat(ctx, lockPath, tok)
	return st != nil, err
}

// ownLockStat is ownLock returning the node's Stat (nil when not ours).
func (b *base[T]) ownLockStat(ctx context.Context, lockPath string, tok []byte) (*framework.Stat, error) {
	data, st, err := b.c.GetData(ctx, lockPath)
	if errors.Is(err, framework.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	_, sid := b.c.Session()
	if st.EphemeralOwner != sid || !bytes.Equal(data, tok) {
		return nil, nil
	}
	return st, nil
}

// stat returns p's Stat, nil when p does not exist (framework's Exists says so with a
// nil Stat and no error).
func stat(ctx context.Context, c *framework.Client, p string) (*framework.Stat, error) {
	st, err := c.Exists(ctx, p)
	if errors.Is(err, framework.ErrNoNode) {
		return nil, nil
	}
	return st, err
}

// unlock deletes our lock node (guaranteed). While ctx lasts it does so before it returns
// (bounded by the clean-up timeout too); once ctx has ended (before or meanwhile), what is
// left of it goes on in the background (framework.Client.GoCleanup, counted by
// WaitGuaranteedDeletes) on a clean-up timeout of its own, and unlock returns at once. A
// caller past its own context passes the context bounding its clean-up (finish's), so
// that the clean-up has one bound overall.
func (b *base[T]) unlock(ctx context.Context, lockPath string, tok []byte) {
	if ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
		done := b.unlockNow(cctx, lockPath, tok)
		cancel()
		if done {
			return
		}
	}
	b.unlockInBackground(ctx, lockPath, tok)
}

// unlockInBackground deletes our lock node (as unlock) in the background
// (framework.Client.GoCleanup, counted by WaitGuaranteedDeletes), on a clean-up timeout
// of its own.
func (b *base[T]) unlockInBackground(ctx context.Context, lockPath string, tok []byte) {
	b.c.GoCleanup(func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		b.unlockNow(cctx, lockPath, tok)
	})
}

// unlockNow deletes our lock node (guaranteed: a delete whose outcome is unknown goes on
// in the client's background worker) and says whether it is done with it: false when it
// could not read the node (ctx ended, a ZooKeeper error).
func (b *base[T]) unlockNow(ctx context.Context, lockPath string, tok []byte) bool {
	st, err := b.ownLockStat(ctx, lockPath, tok)
	if err != nil {
		return false
	}
	if st == nil {
		return true
	}
	// Bounded by the node's czxid: a retry in the background after our session ended
	// must not delete a lock node another consumer made at the same path.
	_ = b.c.Delete(ctx, lockPath, framework.WithMaxCzxid(st.Czxid), framework.Guaranteed(), framework.Quietly())
	return true
}

// finishCancellable runs finish, which goes to its end (bounded by the clean-up timeout)
// even when ctx ended: the handler has run, and an item not removed is delivered again, so
// a consumer stopped on purpose (its context cancelled as it finished an item) must not
// leave the item behind; nor can the removal go on in the background, as the client is
// often closed right after. When ctx ended and the item could not be removed, the error
// matches ctx's error too.
func (b *base[T]) finishCancellable(ctx context.Context, r removal) (string, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	created, err := b.finish(ctx, cctx, r)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return "", errors.Join(err, ctx.Err())
	}
	return created, err
}

// removal is an item held under its lock node, to be removed (requeued, moved) by finish.
type removal struct {
	name    string
	data    []byte // the item's bytes, for a requeue or a move
	czxid   int64  // the item node's, as read under the lock
	dest    string // where the transaction makes the node again ("": nowhere)
	lockGen uint64 // the session generation the lock node was made in
	lockSid int64  // and that session's id
	tok     []byte // the lock node's token
}

// bindRemoval makes the removal transaction ops delete the item node and our lock node
// (its first and last ops) at the versions just read, cur's and mine's. A version read as
// -1 (the counter wrapped) would delete any node at the path: it returns an error
// matching framework.ErrWrappedVersion instead and leaves ops as they were.
func bindRemoval(ops []framework.Op, itemPath, lockPath string, cur, mine *framework.Stat) error {
	item, err := framework.ReadVersion(cur)
	if err != nil {
		return fmt.Errorf("%s: %w", itemPath, err)
	}
	lock, err := framework.ReadVersion(mine)
	if err != nil {
		return fmt.Errorf("%s: %w", lockPath, err)
	}
	ops[0] = framework.DeleteOp(itemPath, item)
	ops[len(ops)-1] = framework.DeleteOp(lockPath, lock)
	return nil
}

// finish removes (or requeues) the item and deletes the lock node, in one transaction.
// ctx is the caller's; cctx bounds the removal: past ctx's end for a consumer, whose
// handler has run (finishCancellable), ctx itself for IDQueue.Remove. lockGen and lockSid are
// the session generation and id the lock node was created in: once the session changed,
// the node at the lock path (if any) is another consumer's, which has taken the item, and
// the item is left to it. The transaction is bound to that session
// (framework.InSession): an attempt whose answer was lost with the connection is never
// sent again in a new session, where it would delete another consumer's lock node with
// the item it holds. czxid is the item node's, as read before the handler ran: a node at its
// name with another czxid is another item (the queue path was deleted and made again
// meanwhile, and its sequence numbers started again), which is left alone: the item
// handled is gone already. A removal that may have taken such a node (the queue was made
// again while it was in flight) returns a *MaybeGoneError.
func (b *base[T]) finish(ctx, cctx context.Context, r removal) (string, error) {
	itemPath := framework.JoinPath(b.path, r.name)
	lockPath := framework.JoinPath(b.o.lockPath, r.name)
	ops := []framework.Op{framework.DeleteOp(itemPath, -1)}
	// The dead-letter path is made when first needed (and again if deleted meanwhile).
	deadLetter := r.dest != "" && parentOf(r.dest) != b.path
	ensureDest := func() error { return nil }
	if deadLetter {
		ensureDest = func() error { return b.ensure(cctx, parentOf(r.dest), &b.deadReady) }
		if err := ensureDest(); err != nil {
			b.unlock(cctx, lockPath, r.tok)
			return "", &NotRemovedError{Path: itemPath, Err: err}
		}
	}
	if r.dest != "" {
		ops = append(ops, framework.CreateOp(r.dest, r.data, framework.PersistentSequential, nil))
	}
	ops = append(ops, framework.DeleteOp(lockPath, -1))
	// The removal is abandoned (and its resends with it) once the lock's session ends: a
	// resend in a new session could take another consumer's lock node with the item. The
	// transaction is bound to the session (a resend in another fails, not sent); the
	// listener ends a wait for a connection sooner.
	tctx, stop := context.WithCancel(cctx)
	defer stop()
	remove := b.c.AddListener(func(framework.State) {
		if b.c.Generation() != r.lockGen {
			stop()
		}
	})
	defer remove()
	// sent says a transaction of ours went out and may have been applied: an item found
	// gone after that is taken for ours, unless our lock node is still there (the
	// transaction deletes both or neither); before, nothing of ours was applied: it was
	// removed by another without the lock when our lock node is still there, and when
	// that went too, someone else deleted it and another consumer may have taken the item
	// (ErrNotRemoved).
	sent := false
	goneMeanwhile := func(lockLeft bool) (string, error) {
		b.unlock(cctx, lockPath, r.tok)
		if sent && !lockLeft {
			return "", nil // removed by us (the answer was lost), or by someone without the lock
		}
		return "", errRemovedMeanwhile
	}
	lost := func() (string, error) {
		// Lost (perhaps only suspended too long): the removal is never sent again, and
		// what is left does not outlive the caller's context. A lock node still ours
		// (the session alive after all) is deleted in the background, so that the item
		// is delivered again if it is still there; where the item is, is read while ctx
		// lasts (within cctx's bound).
		b.unlockInBackground(cctx, lockPath, r.tok)
		lctx, lcancel := context.WithCancel(cctx)
		defer lcancel()
		defer context.AfterFunc(ctx, lcancel)()
		return "", b.lostError(lctx, itemPath, r, sent)
	}
	for {
		if b.c.Generation() != r.lockGen {
			return lost()
		}
		// The transaction deletes the item node and the lock node each at the version
		// just read, once the item's czxid says it is the item handled and the lock
		// node's session and token say it is ours (a multi cannot check a czxid or
		// data): a delete and re-create of the queue within that round trip would take a
		// new item at the reused name, which notRemade then reports (ErrMaybeGone); left
		// is our lock node deleted by someone else and another consumer's made at its
		// path within that round trip (version 0, as ours).
		cur, mine, err := b.readHeld(tctx, itemPath, lockPath, r.tok)
		if err == nil {
			if (cur == nil || cur.Czxid != r.czxid) && mine == nil && !sent {
				// Gone, with our lock node, before any removal of ours went out: someone
				// else deleted the lock node, and another consumer may have locked and
				// taken the item since (its handler run too). Not a removal by someone
				// without the lock, which leaves our lock node: this delivery may be the
				// item's second.
				return "", &NotRemovedError{Path: itemPath, Reason: "its lock node was deleted by someone else before its removal, and the item is gone: another consumer may have taken it", where: whereGone}
			}
			if cur == nil || cur.Czxid != r.czxid {
				return goneMeanwhile(mine != nil)
			}
			if mine == nil {
				// Deleted by someone else while the item was handled (perhaps made again
				// by another consumer, which holds the item now): not ours to remove.
				return "", &NotRemovedError{Path: itemPath, Reason: "its lock node was deleted by someone else before its removal: another consumer may have taken it"}
			}
			if err := bindRemoval(ops, itemPath, lockPath, cur, mine); err != nil {
				// Not sent: at a version read of -1 the transaction would delete any
				// node at those paths. It fails the same way until someone writes the
				// node: give the item back now.
				b.unlock(cctx, lockPath, r.tok)
				return "", &NotRemovedError{Path: itemPath, Reason: "no removal can be bound to the version read", Err: err}
			}
			var res []framework.OpResult
			res, err = b.c.Transaction(framework.InSession(tctx, r.lockGen, r.lockSid), ops...)
			if errors.Is(err, framework.ErrDataTooLarge) {
				// Refused before sending: the item's bytes and the paths do not fit one
				// request. Sending it again fails the same way: give the item back now.
				b.unlock(cctx, lockPath, r.tok)
				return "", &NotRemovedError{Path: itemPath, Reason: "the transaction that removes it (with its requeue or move) does not fit the packet limit; nothing was sent", Err: err}
			}
			var te *framework.TxnError
			certain := (errors.As(err, &te) || errors.Is(err, framework.ErrSessionChanged)) &&
				!errors.Is(err, framework.ErrUnknownOutcome) // answered, or never sent in the new session
			if err != nil && !certain {
				sent = true // it may have been applied
			}
			if b.c.Generation() != r.lockGen || errors.Is(err, framework.ErrSessionChanged) {
				// Whether the removal went through or failed, another consumer may have
				// taken the item after our lock node went.
				return lost()
			}
			if err == nil {
				// Applied: of the item handled, unless the queue was made again between
				// the exists and the transaction (a new item at the reused name went).
				if rerr := notRemade(cctx, b.c, b.path, r.czxid); rerr != nil {
					return "", &MaybeGoneError{Path: itemPath, Err: rerr}
				}
				if r.dest != "" && len(res) > 1 {
					return res[1].Path, nil
				}
				return "", nil
			}
		}
		if cctx.Err() != nil || errors.Is(err, framework.ErrClosed) {
			// Give the item back (it is delivered again) rather than keep it locked for
			// as long as our session lives. (Within what is left of the clean-up
			// timeout, or in the background: one bound overall.)
			b.unlock(cctx, lockPath, r.tok)
			if sent && !errors.Is(err, framework.ErrUnknownOutcome) {
				err = errors.Join(errOutcomeUnknown, err)
			}
			return "", &NotRemovedError{Path: itemPath, Err: err}
		}
		// Applied or not: the next round's reads tell (the item goes only with the
		// transaction, bound to our lock node).
		var te *framework.TxnError
		if deadLetter && errors.As(err, &te) && te.Index == 1 && errors.Is(err, framework.ErrNoNode) {
			// The dead-letter path was deleted since it was made: make it again.
			b.deadReady.Store(false)
			if eerr := ensureDest(); eerr != nil {
				err = eerr
			} else {
				continue
			}
		}
		if errors.Is(err, framework.ErrNotEmpty) || errors.Is(err, framework.ErrNoAuth) || errors.Is(err, framework.ErrInvalidACL) {
			// Sending it again fails the same way: give the item back now.
			b.unlock(cctx, lockPath, r.tok)
			return "", &NotRemovedError{Path: itemPath, Err: err}
		}
		_ = b.pause(cctx, retryPause) // no tight loop: the client's retry policy already ran
	}
}

// readHeld reads, concurrently, the Stat of the item node at itemPath (nil when gone) and
// that of our lock node (nil when the node at lockPath is not ours: gone, or another's).
func (b *base[T]) readHeld(ctx context.Context, itemPath, lockPath string, tok []byte) (item, lock *framework.Stat, err error) {
	var lerr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		lock, lerr = b.ownLockStat(ctx, lockPath, tok)
	}()
	item, err = stat(ctx, b.c, itemPath)
	wg.Wait() // ownLockStat honours ctx
	return item, lock, errors.Join(err, lerr)
}

// itemWhere is where an item is, as far as a read tells.
type itemWhere int

const (
	whereInQueue itemWhere = iota // the item node read before the handler ran is there
	whereGone                     // gone from the queue (another node, or none, at its path)
	whereUnknown                  // not known: the read failed (cut off, ctx ended)
)

// whereIs reads whether the item node with czxid is at p.
func (b *base[T]) whereIs(ctx context.Context, p string, czxid int64) itemWhere {
	st, err := stat(ctx, b.c, p)
	switch {
	case err != nil:
		return whereUnknown
	case st != nil && st.Czxid == czxid:
		return whereInQueue
	}
	return whereGone
}

// lostError is finish's error once the session of the item's lock ended before its
// removal (requeue, move) was known to be applied: it says where the item is, as far as a
// read bounded by ctx tells, and whether a transaction of ours went out (sent).
func (b *base[T]) lostError(ctx context.Context, itemPath string, r removal, sent bool) error {
	what, done := "removal", "removed"
	switch {
	case r.dest != "" && parentOf(r.dest) == b.path:
		what, done = "requeue", "requeued"
	case r.dest != "":
		what, done = "move to the dead-letter path", "moved"
	}
	e := &NotRemovedError{Path: itemPath, where: b.whereIs(ctx, itemPath, r.czxid)}
	switch {
	case sent && e.where != whereInQueue:
		// Gone, or not known: our transaction went out, its answer lost with the session.
		e.Reason = fmt.Sprintf("the session that held its lock ended while its %s was in flight", what)
		if e.where == whereGone {
			e.Reason += fmt.Sprintf(": it is gone from the queue, %s by it or taken by another consumer since", done)
		}
		e.Err = errOutcomeUnknown
	case e.where == whereInQueue:
		e.Reason = fmt.Sprintf("the session that held its lock ended before it was %s: it is in the queue, to be delivered again", done)
	case e.where == whereGone:
		e.Reason = fmt.Sprintf("the session that held its lock ended before it was %s: another consumer has taken it since (or someone removed it)", done)
	default:
		e.Reason = fmt.Sprintf("the session that held its lock ended before it was %s: whether it is still in the queue is not known (another consumer may have taken it)", done)
	}
	return e
}

// consume is Consume (one is false) and ConsumeOne (one is true).
func (b *base[T]) consume(ctx context.Context, h Handler[T], one bool) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalidArgument)
	}
	bad := badNodes{}
	var hold time.Time // this call's back-off after a requeue (noteRequeue)
	var firstBad error // ConsumeOne returns it with ctx's error when nothing was taken
	ctxErr := func() error {
		if one && firstBad != nil {
			return errors.Join(ctx.Err(), firstBad)
		}
		return ctx.Err()
	}
	for {
		if ctx.Err() != nil {
			return ctxErr()
		}
		if err := b.waitHold(ctx, hold); err != nil { // after a requeue: back off
			if ctx.Err() != nil {
				return ctxErr()
			}
			return err
		}
		var names []string
		var w *framework.Watch
		var err error
		var lw lockWait
		cached := false
		var listZxid int64
		if one && b.kind.bySequence() {
			b.leftMu.Lock()
			names, listZxid, b.left = b.left, b.leftZxid, nil
			lw, b.leftLocks = b.leftLocks, lockWait{}
			b.leftMu.Unlock()
			cached = len(names) > 0
			if cached && lw.freed(ctx, b.c) {
				// An item passed over because another consumer held it is free (its
				// holder gone): it comes before what is left of the listing.
				names, lw, cached = nil, lockWait{}, false
			}
		}
		if !cached {
			names, w, listZxid, err = b.namesZxid(ctx, true)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctxErr()
			}
			if errors.Is(err, framework.ErrClosed) || one {
				return err
			}
			b.report(err)
			if err := b.pause(ctx, retryPause); err != nil {
				if ctx.Err() != nil {
					return ctxErr()
				}
				return err
			}
			continue
		}
		stillBad := badNodes{}
		var wake *time.Timer
		took := false
		// Consumers that lose the race for a node to another (their versioned delete
		// fails: someone took it while they were taking it) and consume a plain Queue
		// jump ahead a random few nodes, further the more races they lose in a row, rather
		// than all try the same next one; the nodes jumped over are left to the others (or
		// to the next listing). A node already gone when read is passed over without a
		// jump (IDQueue.Remove, or anyone, may have deleted it), unless this consumer lost a
		// race within its last contendedTakes takes. A lone consumer loses no race and
		// keeps the queue's order.
		// Not an IDQueue's consumers: IDQueue.Remove can win a consumer's delete, and a
		// lone consumer that jumped then would take the queue out of order.
		jumpy := b.kind == kindPlain
		lostRow, jumped, relist := 0, false, false
		var tried []bool
		if one && jumpy {
			tried = make([]bool, len(names))
		}
		for i := 0; i < len(names); i++ {
			name := names[i]
			if bad.skip(ctx, b.c, b.path, name) {
				stillBad[name] = bad[name]
				continue
			}
			if b.kind == kindDelay {
				if due := dueOf(name); due > time.Now().UnixMilli() {
					wake = time.NewTimer(time.Until(time.UnixMilli(due)))
					break
				}
			}
			if tried != nil {
				tried[i] = true
			}
			res, err := b.process(ctx, name, h, &lw, listZxid, &hold)
			if errors.Is(err, ErrMaybeGone) {
				if one {
					return err
				}
				b.report(err)
				err = nil
			}
			if res == stale {
				relist = true // the queue was made again since the listing: list it
				break
			}
			if res == taken && tried != nil {
				rest, restTried := names[i+1:], tried[i+1:]
				if jumped && len(rest) > maxAhead {
					// Nodes jumped over come back with the listing after the next few takes.
					rest, restTried = rest[:maxAhead], restTried[:maxAhead]
				}
				b.keepLeft(rest, restTried, listZxid, lw, stillBad, bad)
			}
			if res == gone {
				b.contention.Store(contendedTakes)
			}
			if res == missing {
				res = skipped
				if b.contention.Load() > 0 {
					res = gone
				}
			}
			if res == taken && b.contention.Load() > 0 {
				b.contention.Add(-1)
			}
			if res == gone {
				res = skipped
				if jumpy {
					lostRow = min(lostRow+1, maxJump)
					if n := mrand.IntN(lostRow + 1); n > 0 {
						i += n
						jumped = true
					}
				}
			} else {
				lostRow = 0
			}
			if ctx.Err() != nil && res != taken {
				return ctxErr()
			}
			var be *BadItemError
			if errors.As(err, &be) {
				if firstBad == nil {
					firstBad = err
				}
				if v, ok := bad[name]; !ok || v != be.node {
					b.report(err) // not reported yet: a new bad node, one at a reused name, or one changed since
				}
				stillBad[name] = be.node
			} else if !one && res == taken && b.o.deadLetter == "" && errors.Is(err, ErrAttemptsExhausted) {
				return err // given up on an item, with nowhere to put it: the caller decides
			} else if err != nil && (!one || res != taken) {
				if errors.Is(err, framework.ErrClosed) || one {
					return err
				}
				b.report(err)
			}
			if res == taken {
				if one {
					// A requeue's back-off is waited out before ConsumeOne returns (the
					// item is requeued already; ctx ending cuts the wait short): the
					// caller's next take comes after it.
					_ = b.waitHold(ctx, hold)
					return err
				}
				took = true
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if !b.kind.bySequence() {
					// A node put since (a lower priority value, an earlier due time)
					// may come before the rest of this listing: list again, as Curator's
					// priority queue does when the children change.
					break
				}
				if lw.freed(ctx, b.c) {
					// An item passed over because another consumer held it is free (its
					// holder finished, or died and its session ended): list again, so
					// that it is taken next rather than after the rest of the listing.
					break
				}
			}
		}
		bad = stillBad
		if took || lw.gone || cached || jumped || relist {
			// (A cached listing that gave nothing, nodes jumped over, or a listing of a
			// queue since made again: list now.)
			if wake != nil {
				wake.Stop()
			}
			continue
		}
		closed := false
		var wakeC <-chan time.Time
		if wake != nil {
			wakeC = wake.C
		}
		lockWoke, stopLockWait := lw.wake()
		select {
		case <-w.Done():
		case <-lockWoke:
		case <-wakeC:
		case <-ctx.Done():
		case <-b.c.Done():
			closed = true
		}
		stopLockWait()
		if wake != nil {
			wake.Stop()
		}
		if closed {
			return framework.ErrClosed
		}
	}
}

// keepLeft keeps the nodes of a ConsumeOne's listing after the one it took that it did not
// try (less the bad nodes it already reported) for the next ConsumeOne, unless another has
// kept some meanwhile. Nodes it jumped over are not kept: other consumers are taking them,
// and the next listing shows those still there (the caller keeps no more than maxAhead
// nodes then, so that the next listing comes soon). locks, the lock nodes of items passed
// over (held by other consumers), goes with them: the next ConsumeOne lists again instead
// when one of those items is free.
func (b *base[T]) keepLeft(names []string, tried []bool, listZxid int64, locks lockWait, bad ...badNodes) {
	kept := make([]string, 0, len(names))
	for i, n := range names {
		if !tried[i] && !bad[0].has(n) && !bad[1].has(n) {
			kept = append(kept, n)
		}
	}
	b.leftMu.Lock()
	if b.left == nil && len(kept) > 0 {
		b.left, b.leftZxid, b.leftLocks = kept, listZxid, locks
	}
	b.leftMu.Unlock()
}

func (b *base[T]) report(err error) {
	if b.o.onError != nil {
		b.o.onError(err)
	}
}

func (b *base[T]) pause(ctx context.Context, d time.Duration) error {
	return locks.SleepBeforeRetry(ctx, b.c, d)
}

// badNodes is what a Consume call remembers of the bad nodes it reported (each by name,
// with its czxid and mzxid), so that it neither reads nor reports them again at each
// listing. Names are reused (a queue path deleted and made again starts its sequence
// numbers again) and a node's data may be set again (repaired in place): a remembered
// name is skipped only while the node at it is the one remembered, unchanged.
type badNodes map[string]nodeVersion

// nodeVersion tells a node from another at the same path (czxid) and its data from
// data set since (mzxid).
type nodeVersion struct{ czxid, mzxid int64 }

// versionOf returns st's nodeVersion.
func versionOf(st *framework.Stat) nodeVersion {
	return nodeVersion{czxid: st.Czxid, mzxid: st.Mzxid}
}

// has reports whether name is remembered.
func (bn badNodes) has(name string) bool {
	_, ok := bn[name]
	return ok
}

// skip reports whether the node name of the queue at queuePath is the bad node
// remembered at that name, unchanged (one exists per remembered name a listing shows; a
// read that fails says yes, until the next listing).
func (bn badNodes) skip(ctx context.Context, c *framework.Client, queuePath, name string) bool {
	v, ok := bn[name]
	if !ok {
		return false
	}
	st, err := stat(ctx, c, framework.JoinPath(queuePath, name))
	return err != nil || (st != nil && versionOf(st) == v)
}
