package sharedcount

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/versioned"
)

// Versioned is a value together with the version and the mzxid (the transaction that last
// changed it) of the node it was read from. TrySet compares both with what the cache
// holds, as Curator does: a deleted and re-created node starts again at version 0 but has
// a new mzxid. (The cache may not have seen the new node yet: TrySet also checks that its
// write went to the node read, see TrySet.)
type Versioned[T any] struct {
	Value   T
	Version int32
	Zxid    int64
}

// Value is Curator's SharedValue: raw bytes in one node, cached and kept current by a
// watch. It is safe for concurrent use.
type Value struct {
	client *framework.Client
	path   string
	seed   []byte

	mu        sync.Mutex
	cur       Versioned[[]byte]
	czxid     int64 // the czxid of the node cur was read from: TrySet binds its write to it
	started   bool
	closed    bool
	listeners map[int]func(Versioned[[]byte])
	states    map[int]func(framework.State)
	nextID    int
	stop      chan struct{}
	wake      chan struct{}
	done      chan struct{}
	removeL   func()
	// Listeners hear new values one at a time on the notifier goroutine, run by gs so
	// that a listener may call Close (which then does not wait for itself) and Set
	// (whose value is queued, not told underneath the running listener).
	gs        *framework.Goroutines
	pending   []Versioned[[]byte] // values not yet told, oldest first
	sig       chan struct{}
	notified  chan struct{} // closed when the notifier returns
	closeDone chan struct{} // closed when the first Close has done its work
}

// NewValue returns a shared value at path; Start creates the node with seed when it does
// not exist. It checks its arguments but does not talk to ZooKeeper.
func NewValue(c *framework.Client, path string, seed []byte) (*Value, error) {
	if c == nil {
		return nil, fmt.Errorf("sharedcount: %w: nil client", framework.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("sharedcount: %w", err)
	}
	if path == "/" || framework.IsReservedPath(path) {
		return nil, fmt.Errorf("sharedcount: %w: %q cannot be a shared value path", framework.ErrInvalidArgument, path)
	}
	if err := c.CheckDataSize(path, len(seed)); err != nil {
		return nil, fmt.Errorf("sharedcount: seed: %w", err)
	}
	return &Value{client: c, path: path, seed: bytes.Clone(seed),
		listeners: map[int]func(Versioned[[]byte]){}, states: map[int]func(framework.State){},
		gs: framework.NewGoroutines(), sig: make(chan struct{}, 1), closeDone: make(chan struct{})}, nil
}

// Path returns the node's path.
func (v *Value) Path() string { return v.path }

// Start creates the node with the seed value if it does not exist (parents as
// containers), reads it, and starts keeping it current. Starting twice is an error
// matching ErrAlreadyStarted (and framework.ErrInvalidArgument), also for two Starts at
// once: one starts the value, the other fails; ErrClosed only after Close.
func (v *Value) Start(ctx context.Context) error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return ErrClosed
	}
	if v.started {
		v.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrAlreadyStarted, v.path)
	}
	v.mu.Unlock()
	_, err := v.client.Create(ctx, v.path, v.seed, framework.WithContainerParents())
	if err != nil && !errors.Is(err, framework.ErrNodeExists) {
		return fmt.Errorf("sharedcount: start %s: %w", v.path, err)
	}
	data, st, ch, err := v.client.GetDataW(ctx, v.path)
	if err != nil {
		return fmt.Errorf("sharedcount: start %s: %w", v.path, err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return ErrClosed
	}
	if v.started { // another Start won meanwhile: the value is open, started by it
		return fmt.Errorf("%w: %s", ErrAlreadyStarted, v.path)
	}
	v.started = true
	v.cur = Versioned[[]byte]{Value: data, Version: st.Version, Zxid: st.Mzxid}
	v.czxid = st.Czxid
	v.stop, v.wake, v.done = make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	v.notified = make(chan struct{})
	v.removeL = v.client.AddListener(v.onState)
	if !v.client.Go(func() { v.loop(ch.Done()) }) {
		close(v.done)
		close(v.notified)
		v.removeL()
		v.started = false // not started: Get says ErrNotStarted, Close has nothing to stop
		return fmt.Errorf("sharedcount: start %s: %w", v.path, framework.ErrClosed)
	}
	v.gs.Go(v.notify)
	return nil
}

// onState passes connection states to the state listeners and asks the loop to read the
// value again after a reconnection.
func (v *Value) onState(s framework.State) {
	if s == framework.Reconnected {
		select {
		case v.wake <- struct{}{}:
		default:
		}
	}
	v.mu.Lock()
	fns := make([]func(framework.State), 0, len(v.states))
	for _, fn := range v.states {
		fns = append(fns, fn)
	}
	v.mu.Unlock()
	for _, fn := range fns {
		func() {
			defer framework.LogPanic(v.client.Logger(), "shared value state listener panicked", "component", "sharedcount", "path", v.path, "state", s.String())
			fn(s)
		}()
	}
}

// loop waits for the watch (or a reconnection) and reads the node again.
func (v *Value) loop(ch <-chan struct{}) {
	defer close(v.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-v.stop:
		case <-v.client.Done():
		}
		cancel()
	}()
	tick := time.NewTicker(recheckEvery)
	defer tick.Stop()
	failing := false // the last refresh failed
	for {
		select {
		case <-ch: // fired (changed, deleted, or the session ended)
		case <-v.wake:
		case <-ctx.Done():
			return
		case <-tick.C:
			if !v.changedUnseen(ctx) {
				continue
			}
		}
		var err error
		ch, err = v.refresh(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if failing { // told once, not at every look (a node that stays unreadable)
				v.client.Logger().Debug("shared value not refreshed", "component", "sharedcount", "path", v.path, "err", err)
			} else {
				v.client.Logger().Warn("shared value not refreshed", "component", "sharedcount", "path", v.path, "err", err)
			}
			ch = nil // a reconnection, or the next look, tries again
		}
		failing = err != nil
	}
}

// recheckEvery is how often a Value looks at its node without a watch (one exists,
// which needs no permission on the node): ZooKeeper tells a watch nothing about a change
// to a node its client may not read, and setACL fires no watch, so a change made while
// the node was unreadable would otherwise stay unseen once it is readable again.
const recheckEvery = 10 * time.Second

// changedUnseen reports whether the node's mzxid is past the value held (a change the
// watch did not tell): the caller then reads it again. A failed look, or no node, reports
// false (a deletion keeps the value held, as the watch's event does).
func (v *Value) changedUnseen(ctx context.Context) bool {
	st, err := v.client.Exists(ctx, v.path)
	if err != nil || st == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return st.Mzxid > v.cur.Zxid
}

// refresh reads the node with a data watch, updates the cache and tells the listeners
// when the node changed. A missing node gets no watch of its own (see awaitMade).
func (v *Value) refresh(ctx context.Context) (<-chan struct{}, error) {
	data, st, ch, err := v.client.GetDataW(ctx, v.path)
	if errors.Is(err, framework.ErrNoNode) {
		return v.awaitMade(ctx)
	}
	if err != nil {
		return nil, err
	}
	v.update(data, st)
	return ch.Done(), nil
}

// awaitMade returns a channel that is closed when the missing node may have been made
// again: a children watch on its nearest ancestor that is there, which fires when the
// next node on the way to the value's path is made (or the ancestor changes or goes).
// It watches no missing path: an exists watch on the value's path would wait for a create
// that, once the Value is closed, may never come, and go-zookeeper cannot remove a watch;
// the one left here is on a node that is there, and fires when its children change or it
// goes (an empty container parent is reaped by the server). A node found on the way
// means look again at once; an ancestor this client may not list sets no watch (nil):
// the periodic look (recheckEvery) notices the node once it is made.
func (v *Value) awaitMade(ctx context.Context) (<-chan struct{}, error) {
	for child := v.path; child != "/"; child = framework.ParentPath(child) {
		names, _, w, err := v.client.ChildrenW(ctx, framework.ParentPath(child))
		switch {
		case errors.Is(err, framework.ErrNoNode):
			continue // gone as well: watch further up
		case errors.Is(err, framework.ErrNoAuth):
			return nil, nil
		case err != nil:
			return nil, err
		case slices.Contains(names, framework.NodeName(child)):
			return closedChan(), nil // made in between: read it
		}
		return w.Done(), nil
	}
	return nil, nil // not reached: the root is always there
}

func closedChan() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// update stores a newer value and has the listeners told of it. Newer is by the node's
// mzxid, not its bytes: a node that changed and holds the same bytes again (0 -> 1 -> 0
// between two reads; a node deleted and made again) is a change, told with its new
// version. (Curator's SharedValue tells its listeners after every read that a watch
// event or a reconnection makes, changed or not.)
func (v *Value) update(data []byte, st *framework.Stat) {
	v.mu.Lock()
	if st.Mzxid <= v.cur.Zxid { // older than, or the same as, what we have
		v.mu.Unlock()
		return
	}
	v.cur = Versioned[[]byte]{Value: data, Version: st.Version, Zxid: st.Mzxid}
	v.czxid = st.Czxid
	v.pending = append(v.pending, Versioned[[]byte]{Value: bytes.Clone(data), Version: st.Version, Zxid: st.Mzxid})
	v.mu.Unlock()
	select {
	case v.sig <- struct{}{}:
	default:
	}
}

// notify tells the listeners each new value, one call at a time, until Close or the
// client's Close.
func (v *Value) notify() {
	defer close(v.notified)
	for {
		v.mu.Lock()
		if len(v.pending) == 0 {
			v.mu.Unlock()
			select {
			case <-v.sig:
				continue
			case <-v.stop:
				return
			case <-v.client.Done():
				return
			}
		}
		next := v.pending[0]
		v.pending = v.pending[1:]
		fns := make([]func(Versioned[[]byte]), 0, len(v.listeners))
		for _, fn := range v.listeners {
			fns = append(fns, fn)
		}
		v.mu.Unlock()
		for _, fn := range fns {
			select {
			case <-v.stop:
				return
			default:
			}
			v.call(fn, Versioned[[]byte]{Value: bytes.Clone(next.Value), Version: next.Version, Zxid: next.Zxid})
		}
	}
}

// call tells one listener; a listener that panics is logged and the others are told.
func (v *Value) call(fn func(Versioned[[]byte]), val Versioned[[]byte]) {
	defer framework.LogPanic(v.client.Logger(), "shared value listener panicked", "component", "sharedcount", "path", v.path)
	fn(val)
}

// Get returns the cached value and its version (ErrNotStarted before Start).
func (v *Value) Get() (Versioned[[]byte], error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return Versioned[[]byte]{}, ErrClosed
	}
	if !v.started {
		return Versioned[[]byte]{}, ErrNotStarted
	}
	return Versioned[[]byte]{Value: bytes.Clone(v.cur.Value), Version: v.cur.Version, Zxid: v.cur.Zxid}, nil
}

// TrySet writes b only if the node is still the one prev was read from, at prev.Version
// (and prev is what the cache holds, as Curator checks). It returns an error matching
// ErrConflict, having written nothing, when someone changed the node since prev was read;
// the cache is then read again so that the next Get returns the newer value. An error
// matching ErrUnknownOutcome means the write may or may not have been applied.
//
// A version is not an identity: a node deleted and made again since prev was read starts
// again at version 0, and a versioned write is applied to it when its version matches
// (ZooKeeper cannot refuse the write once it is sent). TrySet checks the czxid the write
// returns against the node read; when they differ, the write went to the new node and
// overwrote what its maker wrote (a reset, say): TrySet then returns an error matching
// ErrNodeReplaced and ErrUnknownOutcome, never success, and Get returns what the node
// holds now. The caller decides what the lost value was worth: read again, and write
// again only if the value still calls for it; a participant that resets the value should
// check it afterwards (its own reset may be the write that was lost). Curator's TrySet
// reports such a write as a success.
func (v *Value) TrySet(ctx context.Context, prev Versioned[[]byte], b []byte) error {
	v.mu.Lock()
	if err := v.usableLocked(); err != nil {
		v.mu.Unlock()
		return err
	}
	cur, czxid := v.cur, v.czxid
	v.mu.Unlock()
	if prev.Zxid != cur.Zxid || prev.Version != cur.Version || !bytes.Equal(prev.Value, cur.Value) {
		return fmt.Errorf("%w: %s is at version %d, not %d", ErrConflict, v.path, cur.Version, prev.Version)
	}
	st, err := versioned.SetDataOn(ctx, v.client, v.path, b, prev.Version, czxid)
	if errors.Is(err, versioned.ErrNodeReplaced) {
		v.update(bytes.Clone(b), st) // what the new node holds now
		return fmt.Errorf("sharedcount: set %s: %w", v.path, err)
	}
	if errors.Is(err, versioned.ErrConflict) {
		if data, st, rerr := v.client.GetData(ctx, v.path); rerr == nil {
			v.update(data, st)
		}
		return fmt.Errorf("%w: %s: %w", ErrConflict, v.path, err)
	}
	if err != nil {
		return fmt.Errorf("sharedcount: set %s: %w", v.path, err)
	}
	v.update(bytes.Clone(b), st)
	return nil
}

// Set writes b whatever the node holds. An error matching ErrUnknownOutcome means the
// write may or may not have been applied; one matching ErrConflict (and
// framework.ErrNoNode), that the node was deleted and nothing was written (Set does not
// create it again).
func (v *Value) Set(ctx context.Context, b []byte) error {
	v.mu.Lock()
	if err := v.usableLocked(); err != nil {
		v.mu.Unlock()
		return err
	}
	v.mu.Unlock()
	st, err := versioned.SetData(ctx, v.client, v.path, b, -1)
	if errors.Is(err, versioned.ErrConflict) { // no node: nothing written
		return fmt.Errorf("%w: %s: %w", ErrConflict, v.path, err)
	}
	if err != nil {
		return fmt.Errorf("sharedcount: set %s: %w", v.path, err)
	}
	v.update(bytes.Clone(b), st)
	return nil
}

func (v *Value) usableLocked() error {
	if v.closed {
		return ErrClosed
	}
	if !v.started {
		return ErrNotStarted
	}
	return nil
}

// AddListener registers fn to hear each new value (with its version), one call at a
// time on a goroutine the library owns. A new value is a change of the node (a newer
// mzxid), also one back to the same bytes. A listener that panics is logged (at Error,
// on the client's logger) and the others are told. It returns a function that
// unregisters fn.
func (v *Value) AddListener(fn func(Versioned[[]byte])) (remove func()) {
	if fn == nil {
		return func() {}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	id := v.nextID
	v.nextID++
	v.listeners[id] = fn
	return func() { v.mu.Lock(); delete(v.listeners, id); v.mu.Unlock() }
}

// AddStateListener registers fn to hear the client's connection states from now on. It
// returns a function that unregisters fn.
func (v *Value) AddStateListener(fn func(framework.State)) (remove func()) {
	if fn == nil {
		return func() {}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	id := v.nextID
	v.nextID++
	v.states[id] = fn
	return func() { v.mu.Lock(); delete(v.states, id); v.mu.Unlock() }
}

// Close stops keeping the value current and waits for the watch goroutine. The node
// stays. The value watches its node with a data watch, set only while the node is there,
// so Close leaves no watch on a path where no node is: the data watch on the node, or,
// while the node is missing, the children watch on its nearest ancestor, stays registered
// on the server until that node changes or goes, or the session ends (go-zookeeper
// cannot remove a watch); when it fires, nothing is done.
// Close may be called many times, also from a listener: there it does not wait for the
// listener's own goroutine, which ends once the listener returns; a Close from anywhere
// else waits for it.
func (v *Value) Close() error {
	v.mu.Lock()
	if v.closed {
		started, notified := v.started, v.notified
		v.mu.Unlock()
		if started && !v.gs.Inside() {
			<-v.closeDone
			<-notified
		}
		return nil
	}
	v.closed = true
	started := v.started
	v.mu.Unlock()
	defer close(v.closeDone)
	if started {
		v.removeL()
		close(v.stop)
		<-v.done
		if !v.gs.Inside() {
			<-v.notified
		}
	}
	return nil
}
