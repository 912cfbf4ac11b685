package persistentnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/retry"
)

// cleanupTimeout bounds Close's delete of the node.
const cleanupTimeout = 10 * time.Second

// Created is what a listener hears when the Node created its node.
type Created struct {
	// Path is the node's path (ActualPath).
	Path string
	// Recreated is false for the first creation, true for each one after the node was
	// deleted or its session lost.
	Recreated bool
}

const (
	stateLatent = iota
	stateStarted
	stateClosed
)

// Node keeps one node in place: Curator's PersistentNode. It is safe for concurrent use.
type Node struct {
	client        *framework.Client
	base          string
	o             options
	deleteOnClose bool

	// g runs the listener goroutine (dispatch), so that a Close from a listener does not
	// wait for it; the loops (run, TTLNode's) call no user code and are always waited for.
	g *framework.Goroutines
	// write orders the writes of the node's data: a one-slot semaphore, taken with a
	// context (lockWrite), so that a SetData waiting for another write honours its own.
	write chan struct{}
	// token marks the nodes this Node creates (in their ACL) when it has no protected
	// name: a node at the path is this Node's own only when it carries the token, whatever
	// its ephemeralOwner (another Node on the same client has the same session).
	token framework.OwnerToken

	mu       sync.Mutex
	state    int
	data     []byte
	dataGen  uint64 // bumped by each SetData
	dirty    bool   // a SetData write failed: write the data again once the node is seen
	path     string // the node's path; "" until first created
	owned    bool   // the node at path was made by this Node
	czxid    int64  // its czxid, when known
	inflight string // the path of a first create of an unprotected, not sequential node, until answered
	// inflightPrefix is the protected prefix of a first create of a protected node, until
	// answered: Close finds the node such a create given up on made by it.
	inflightPrefix string
	// seqLeft: a first create of an unprotected sequential node failed, and may have made
	// its node all the same (a lost reply, then no retry succeeded): a node carrying the
	// token may be under the parent. The next step, or Close, looks for it.
	seqLeft bool
	// seqPause is the pause before the next sequential create after one was refused
	// (node exists: a node at the name the parent's counter gives); 0 after a success.
	seqPause time.Duration
	madeOnce bool // the Node has made its node (a later creation is a re-creation)
	// creates counts the requests of every create (the first and the re-creations) until
	// they are answered, also once given
	// up on: Close waits for them before it looks for the node (see deleteOwn).
	creates framework.InFlight
	// sent counts the creates sent (the first and the re-creations): one sent after the
	// czxid was read may have made a node of another czxid although its answer was lost
	// (TTLNode's Close looks at its container then).
	sent      uint64
	lastErr   error
	listeners map[int]func(Created)
	nextID    int
	events    []Created     // creations the listener goroutine has yet to tell
	evSig     chan struct{} // one slot: events has grown
	dispDone  chan struct{} // closed when the listener goroutine ends
	createdCh chan struct{} // closed at the first creation
	stop      chan struct{}
	wake      chan struct{}
	done      chan struct{}
	closeDone chan struct{}
	unlisten  func()
}

// New returns a Node that will keep a node at path with data. It checks its arguments but
// does not talk to ZooKeeper: Start does.
func New(c *framework.Client, path string, data []byte, opts ...Option) (*Node, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return newNode(c, path, data, o, true)
}

func newNode(c *framework.Client, path string, data []byte, o options, deleteOnClose bool) (*Node, error) {
	if c == nil {
		return nil, fmt.Errorf("persistentnode: %w: nil client", framework.ErrInvalidArgument)
	}
	if o.mode < framework.Persistent || o.mode > framework.PersistentSequentialWithTTL {
		return nil, fmt.Errorf("persistentnode: %w: unknown create mode %d", framework.ErrInvalidArgument, o.mode)
	}
	validate := framework.ValidatePath
	if sequential(o.mode) {
		validate = framework.ValidatePathSequential
	}
	if err := validate(path); err != nil {
		return nil, fmt.Errorf("persistentnode: %w", err)
	}
	if path == "/" || framework.IsReservedPath(path) {
		return nil, fmt.Errorf("persistentnode: %w: %q cannot be a node's path", framework.ErrInvalidArgument, path)
	}
	if isTTL(o.mode) != (o.ttl > 0) {
		return nil, fmt.Errorf("persistentnode: %w: a TTL is needed with, and only with, a TTL mode (mode %d, TTL %v)", framework.ErrInvalidArgument, o.mode, o.ttl)
	}
	if o.ttl > 0 {
		if err := checkTTL(o.ttl); err != nil {
			return nil, err
		}
	}
	if err := c.CheckDataSize(path, len(data)); err != nil {
		return nil, fmt.Errorf("persistentnode: %w", err)
	}
	n := &Node{client: c, base: path, o: o, deleteOnClose: deleteOnClose, g: framework.NewGoroutines(),
		write: make(chan struct{}, 1), data: bytes.Clone(data), listeners: map[int]func(Created){}, createdCh: make(chan struct{}),
		closeDone: make(chan struct{})}
	if !o.protected {
		n.token = framework.NewOwnerToken()
	}
	return n, nil
}

// lockWrite takes the write semaphore, or returns ctx's error when ctx ends first.
func (n *Node) lockWrite(ctx context.Context) error {
	select {
	case n.write <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unlockWrite gives the write semaphore back; it never blocks (the caller holds it).
func (n *Node) unlockWrite() { <-n.write }

// maxTTL is the largest TTL ZooKeeper takes: 40 bits of milliseconds.
const maxTTL = (1<<40 - 1) * time.Millisecond

// checkTTL refuses a TTL that ZooKeeper refuses whatever the server: under a
// millisecond (it counts in milliseconds, and refuses 0) or over maxTTL.
func checkTTL(d time.Duration) error {
	if d < time.Millisecond || d > maxTTL {
		return fmt.Errorf("persistentnode: %w: TTL %v (ZooKeeper takes 1 ms to 2^40-1 ms)", framework.ErrInvalidArgument, d)
	}
	return nil
}

func sequential(m framework.CreateMode) bool {
	return m == framework.PersistentSequential || m == framework.EphemeralSequential || m == framework.PersistentSequentialWithTTL
}

func isTTL(m framework.CreateMode) bool {
	return m == framework.PersistentWithTTL || m == framework.PersistentSequentialWithTTL
}

func ephemeral(m framework.CreateMode) bool {
	return m == framework.Ephemeral || m == framework.EphemeralSequential
}

// plain is the mode of a re-creation: the same without the sequence (the name is known).
func plain(m framework.CreateMode) framework.CreateMode {
	switch m {
	case framework.EphemeralSequential:
		return framework.Ephemeral
	case framework.PersistentSequential:
		return framework.Persistent
	case framework.PersistentSequentialWithTTL:
		return framework.PersistentWithTTL
	}
	return m
}

// Start starts creating the node, in the background, and keeping it in place. It does
// not wait: WaitForInitialCreate does. Starting twice, or after Close, is an error.
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch n.state {
	case stateClosed:
		return ErrClosed
	case stateStarted:
		return ErrAlreadyStarted
	}
	select {
	case <-n.client.Done():
		return fmt.Errorf("persistentnode: start %s: %w", n.base, framework.ErrClosed)
	default:
	}
	n.state = stateStarted
	n.stop, n.wake, n.done = make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	n.evSig, n.dispDone = make(chan struct{}, 1), make(chan struct{})
	n.unlisten = n.client.AddListener(func(s framework.State) {
		if s == framework.Reconnected {
			n.poke()
		}
	})
	go n.run()
	n.g.Go(n.dispatch)
	return nil
}

// poke wakes the loop to look at the node again.
func (n *Node) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// WaitForInitialCreate waits until the node was created the first time (or found at its
// path), the context ends, or the Node is closed. When the context ends it returns the
// context's error, together with the last error the creation met, if any.
func (n *Node) WaitForInitialCreate(ctx context.Context) error {
	n.mu.Lock()
	state, stop := n.state, n.stop
	n.mu.Unlock()
	switch state {
	case stateLatent:
		return ErrNotStarted
	case stateClosed:
		return ErrClosed
	}
	select {
	case <-n.createdCh:
		return nil
	default:
	}
	select {
	case <-n.createdCh:
		return nil
	case <-stop:
		return ErrClosed
	case <-n.client.Done():
		return fmt.Errorf("persistentnode: %s: %w", n.base, framework.ErrClosed)
	case <-ctx.Done():
		n.mu.Lock()
		last := n.lastErr
		n.mu.Unlock()
		if last != nil {
			return fmt.Errorf("persistentnode: %s not created: %w (last error: %w)", n.base, ctx.Err(), last)
		}
		return fmt.Errorf("persistentnode: %s not created: %w", n.base, ctx.Err())
	}
}

// ActualPath returns the node's path, with its protected prefix and sequence suffix if
// any; "" before the first creation and after Close.
func (n *Node) ActualPath() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.path
}

// Data returns the data the node is kept with.
func (n *Node) Data() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return bytes.Clone(n.data)
}

// SetData makes data the node's data: the node is written now when it exists, and every
// later (re-)creation uses data. Unlike Curator's, it may be called before the first
// creation (which then uses data). The node written is the Node's own: in a sequential
// mode, whose name the parent's counter gives again once the parent was deleted and made
// again, the one with the czxid the Node's node had (SetData reads its Stat and writes at
// the version read only when the czxid is that one), else the node at its path. When the
// node is not there (deleted, not re-created yet) or another's node has its sequential
// name, SetData writes nothing and returns nil: data are the wanted data, and the Node
// creates its node again with them (a sequential one as a new sequential node). A
// sequential node deleted and made again by someone else between that read and the write,
// at the version read, takes the write all the same (ZooKeeper cannot refuse it once
// sent): SetData then returns an error matching framework.ErrUnknownOutcome, and the Node
// makes a new node of its own. SetData waits for another write of this Node's data
// (another SetData, the loop's) within ctx: when ctx ends during that wait, it returns
// ctx's error (wrapped, "waiting for another write") and nothing changed. When ctx ends
// during SetData's own write, or any other error comes, the node was not provably
// written: its data may or may not be data (a write given up on may still be applied),
// the wanted data are data all the same, and they are written again once the node is
// seen.
//
// When ctx carries a guard (framework.WithGuard: a lock's lease, a leader's term), the
// write goes in one transaction with the guard's checks: the server applies it only while
// the lease or term holds, and an error matching framework.ErrFenced says it was refused.
// Only an applied guarded write changes the data the node is later created again with;
// before the first creation, or when the Node's node is not there (as above), a guarded
// SetData fails with framework.ErrNoNode.
func (n *Node) SetData(ctx context.Context, data []byte) error {
	if err := n.client.CheckDataSize(n.base, len(data)); err != nil {
		return fmt.Errorf("persistentnode: %w", err)
	}
	if err := n.lockWrite(ctx); err != nil {
		// Another write of this Node is under way: nothing changed.
		return fmt.Errorf("persistentnode: set data of %s: waiting for another write: %w", n.base, err)
	}
	defer n.unlockWrite()
	n.mu.Lock()
	if n.state == stateClosed {
		n.mu.Unlock()
		return ErrClosed
	}
	if g, ok := framework.GuardFrom(ctx); ok {
		path := n.path
		n.mu.Unlock()
		return n.setDataGuarded(ctx, g, path, data) // guard.go
	}
	n.data = bytes.Clone(data)
	n.dataGen++
	path := n.path
	n.mu.Unlock()
	if path == "" {
		return nil // the creation writes it
	}
	err := n.writeData(ctx, path, func(v int32) (*framework.Stat, error) { return n.client.SetData(ctx, path, data, v) })
	if errors.Is(err, framework.ErrNoNode) {
		n.poke() // the loop creates it again (a sequential one afresh) with data
		return nil
	}
	if err != nil {
		n.mu.Lock()
		n.dirty = true
		n.mu.Unlock()
		n.poke()
		return fmt.Errorf("persistentnode: set data of %s: %w", path, err)
	}
	return nil
}

// writeData writes the node at path, this Node's node, with write: a setData (plain or
// guarded) at the version given (-1: any), which returns the node's new Stat. Outside a
// sequential mode the node is the one at its path (one found there is kept and written,
// as Curator does): one write at any version. A sequential node's name is not its
// identity: a parent deleted and made again restarts its counter, and another's node
// gets the name. There the node is the one with the Node's czxid (when not known, the
// one its protected name or token proves the Node's: mine), as in deleteOwn: writeData
// reads the node's Stat and writes at the version read (framework.ReadVersion) only when
// the czxid is the Node's, reading again after a write in between (BadVersion), at most
// three times. No node at the name, another's node there, or a Node that keeps another
// node by now, is an error matching framework.ErrNoNode: nothing was written. A node
// deleted and made again between the read and the write, at the version read (a new node
// starts at 0), takes the write all the same: the Stat written then has another czxid,
// and the error matches framework.ErrUnknownOutcome (errWrittenElsewhere).
func (n *Node) writeData(ctx context.Context, path string, write func(version int32) (*framework.Stat, error)) error {
	if !sequential(n.o.mode) {
		_, err := write(-1)
		return err
	}
	n.mu.Lock()
	czxid, cur := n.czxid, n.path
	n.mu.Unlock()
	if cur != path {
		return fmt.Errorf("%s: %w: the node keeps %q now", path, framework.ErrNoNode, cur)
	}
	if czxid == 0 { // the read after its create failed: its name or token proves it
		st, mine, err := n.mine(ctx, path)
		if err != nil {
			return err
		}
		if st == nil || !mine {
			return fmt.Errorf("%s: %w: the node at the name is not provably this node's", path, framework.ErrNoNode)
		}
		czxid = st.Czxid
	}
	for range 3 {
		st, err := n.client.Exists(ctx, path)
		if err != nil {
			return err
		}
		if st == nil || st.Czxid != czxid {
			return fmt.Errorf("%s: %w: the node at the name is not this node's (czxid %#x)", path, framework.ErrNoNode, czxid)
		}
		v, err := framework.ReadVersion(st)
		if err != nil {
			return err
		}
		nst, err := write(v)
		switch {
		case errors.Is(err, framework.ErrBadVersion) && !errors.Is(err, framework.ErrFenced):
			continue // written in between: read again
		case err != nil:
			return err
		case nst.Czxid != czxid:
			return fmt.Errorf("%s: %w (czxid %#x, not this node's %#x)", path, errWrittenElsewhere, nst.Czxid, czxid)
		}
		return nil
	}
	return fmt.Errorf("%s: %w: the node kept changing", path, framework.ErrBadVersion)
}

// AddListener registers fn to hear each creation of the node, one call at a time, in
// order, on a goroutine the library owns (not the one that keeps the node in place: a
// slow listener does not delay that). A listener that panics is logged (at Error, on the
// client's logger) and the others are told. fn may call Close. It returns a function
// that unregisters fn.
func (n *Node) AddListener(fn func(Created)) (remove func()) {
	if fn == nil {
		return func() {}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	id := n.nextID
	n.nextID++
	n.listeners[id] = fn
	return func() { n.mu.Lock(); delete(n.listeners, id); n.mu.Unlock() }
}

// run is the loop that keeps the node in place.
func (n *Node) run() {
	defer close(n.done)
	ctx, release := untilStopped(n.stop, n.client.Done())
	defer release()
	for {
		// Checked before each step, not left to ctx alone: ctx ends only a moment after
		// Close (a listener's Close too, which does not wait for this loop to see it).
		if stopped(n.stop, n.client.Done()) {
			return
		}
		next, err := n.step(ctx)
		if ctx.Err() != nil || stopped(n.stop, n.client.Done()) {
			return
		}
		n.mu.Lock()
		n.lastErr = err
		n.mu.Unlock()
		if err != nil {
			n.client.Logger().Warn("persistent node not in place", "component", "persistentnode", "path", n.base, "err", err)
			if retry.IsRetryable(err, true) || errors.Is(err, framework.ErrNotConnected) {
				continue // the next request waits for a connection
			}
			// Otherwise wait for the node's watch, when step set one (as Curator watches
			// the node whatever its write returned), a reconnection or a SetData.
		}
		if !n.await(ctx, next) {
			return
		}
	}
}

// recheckEvery is how often a Node looks at its node without a watch (one exists
// request, which needs no permission on the node): ZooKeeper tells a watch nothing about
// a node its client may not read, so a node whose ACL someone changed to deny this
// client READ and then deleted fires no watch. A deletion made while the node was
// unreadable is noticed within recheckEvery.
const recheckEvery = 10 * time.Second

// await waits for what step returned (next), a poke or, every recheckEvery, a look
// that finds the node gone unseen by the watch. It returns false
// when ctx ended.
func (n *Node) await(ctx context.Context, next <-chan struct{}) bool {
	tick := time.NewTicker(recheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-next:
			return true
		case <-n.wake:
			return true
		case <-ctx.Done():
			return false
		case <-tick.C:
			if n.goneUnseen(ctx) {
				return true
			}
		}
	}
}

// goneUnseen reports whether the node this Node keeps is gone, as seen by an exists
// without a watch (one that set a watch each time would pile watchers up on a node that
// never changes): the next step then acts as on its watch's event. A failed look reports
// false (a connection event wakes the loop).
func (n *Node) goneUnseen(ctx context.Context) bool {
	n.mu.Lock()
	path := n.path
	n.mu.Unlock()
	if path == "" {
		return false
	}
	st, err := n.client.Exists(ctx, path)
	if err != nil {
		return false
	}
	return st == nil
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// step brings the node in place once. It returns what to wait for before the next step:
// the node's data watch (see look), a closed channel to look again at once, or nil (no
// watch: a non-retryable error with no node to watch, or a node this client may not
// read; wait for a poke or await's recheck).
func (n *Node) step(ctx context.Context) (<-chan struct{}, error) {
	// dirty is taken here, atomically with its clearing: a SetData that fails from now
	// on sets it again for the next step.
	n.mu.Lock()
	path, dirty := n.path, n.dirty
	n.dirty = false
	n.mu.Unlock()
	// keep marks the data not written again when this step could not write them.
	keep := func(err error) error {
		if err != nil && dirty {
			n.setDirty()
		}
		return err
	}
	if path == "" {
		n.mu.Lock()
		left := n.seqLeft
		n.mu.Unlock()
		if left { // an earlier first create may have made the node: take it rather than make another
			found, err := n.adoptLeft(ctx)
			if err != nil || found {
				return n.afterCreate(ctx, keep(err))
			}
		}
		err := n.create(ctx, n.base, n.o.mode, n.o.protected, false)
		if errors.Is(err, errSeqRefused) {
			return n.seqBackoff(), keep(err)
		}
		return n.afterCreate(ctx, keep(err))
	}
	st, next, err := n.look(ctx, path)
	if err != nil {
		return nil, keep(err)
	}
	if st == nil {
		if sequential(n.o.mode) && !n.o.protected {
			// Made again at its name only in the parent it was made in: in a parent
			// deleted and made again, whose counter restarted, that name is ahead of the
			// counter and would block every later sequential create of the base there.
			// (A protected name, with its UUID, is never one the counter gives.)
			same, err := n.sameParent(ctx, path)
			if err != nil {
				return n.afterCreate(ctx, keep(err))
			}
			if !same {
				n.client.Logger().Info("sequential node's parent made again (or not known to be the same); making a new sequential node", "component", "persistentnode", "path", path)
				n.mu.Lock()
				n.path, n.owned, n.czxid = "", false, 0
				n.mu.Unlock()
				if dirty {
					n.setDirty()
				}
				return closedChan, nil
			}
		}
		err := n.create(ctx, path, plain(n.o.mode), false, true)
		if sequential(n.o.mode) && !n.o.protected && errors.Is(err, framework.ErrNoNode) {
			// The parent went between the look and the create (made again at its name
			// without its parents: see create): the next step makes a new one.
			return closedChan, nil
		}
		return n.afterCreate(ctx, keep(err))
	}
	n.mu.Lock()
	owned, known := n.owned, n.czxid
	n.mu.Unlock()
	if owned && st.Czxid != known {
		// The node at path is not the one this Node knows as its own: it did not read the
		// czxid of its node (known 0: the read after the create failed), or the node was
		// replaced (deleted and made again: by this Node's own re-creation, whose reply was
		// lost and whose retries failed, or by someone else, also in one transaction, so
		// that this Node never saw the path empty; a sequential name reused by another's
		// node, the parent made again). It is ours only if its token or protected name
		// proves it.
		var mine bool
		st, mine, err = n.mine(ctx, path)
		if err != nil || st == nil {
			return next, keep(err) // gone: the watch fires (or fired), and the next step makes it
		}
		n.mu.Lock()
		switch {
		case mine:
			n.czxid = st.Czxid
		case sequential(n.o.mode):
			// Its name came from the parent's counter: another's node at it is neither
			// kept nor written (see create); the next step makes a new one.
			n.path, n.owned, n.czxid = "", false, 0
		default:
			n.owned, n.czxid = false, 0 // another's node: kept, as one found at the path
		}
		n.mu.Unlock()
		switch {
		case mine && known != 0:
			// This Node's re-creation made it (its answer was lost): told now, and its data
			// written (a SetData since may have missed it).
			n.client.Logger().Info("node at the path made by this node's re-creation whose answer was lost; taken as its own", "component", "persistentnode", "path", path)
			n.created(Created{Path: path, Recreated: true})
			dirty = true
		case mine:
		case sequential(n.o.mode):
			n.client.Logger().Info("node at the path replaced by another's; making a new one", "component", "persistentnode", "path", path)
			if dirty {
				n.setDirty()
			}
			return closedChan, nil
		default:
			n.client.Logger().Info("node at the path replaced by another's; kept", "component", "persistentnode", "path", path)
			// Kept and its data set, as a node found at the path is (see create): the node
			// this Node knew (its czxid) was replaced. When that czxid was not known (the
			// read after this Node's create failed), the data are written only when a
			// SetData failed, as before.
			dirty = dirty || known != 0
		}
	}
	if dirty {
		if err := n.syncData(ctx, path, 0, true); err != nil {
			return next, err // the watch is set: keep it (syncData set dirty again)
		}
	}
	return next, nil
}

// look reads the node at path with a data watch (getData), which the server sets only
// on a node that is there and fires when that node changes or goes: the watch a Node
// leaves behind when Close ends its loop during a look (the read still reaches the
// server) is on a node that will go (deleted by Close, reaped by the server) or is
// another's, never on a path nobody makes again. An exists watch on a missing node
// would wait for a create that, once the Node is closed, may never come, and go-zookeeper
// cannot remove a watch. It returns the node's Stat (nil: no node) and the watch's
// channel; nil when no watch was set: no node, or one this client may not read (no
// READ), which is looked at with an exists and no watch (ZooKeeper tells a watch nothing
// about such a node: await's recheck notices it gone).
func (n *Node) look(ctx context.Context, path string) (*framework.Stat, <-chan struct{}, error) {
	_, st, w, err := n.client.GetDataW(ctx, path)
	switch {
	case errors.Is(err, framework.ErrNoNode):
		return nil, nil, nil
	case errors.Is(err, framework.ErrNoAuth):
		st, err = n.client.Exists(ctx, path)
		return st, nil, err
	case err != nil:
		return nil, nil, err
	}
	return st, w.Done(), nil
}

// errSeqRefused: a sequential create was refused, a node being at the name the parent's
// counter gave (made there by name: a parent deleted and made again restarts its counter,
// and a refusal does not advance it).
var errSeqRefused = errors.New("sequential create refused: a node has the name the parent's counter gives")

// seqBackoff returns a channel closed after the pause before the next sequential create
// after a refusal (errSeqRefused), doubling from 100 ms to 5 s: the refusal changes
// nothing, so trying again at once would spin.
func (n *Node) seqBackoff() <-chan struct{} {
	n.mu.Lock()
	n.seqPause = min(max(2*n.seqPause, 100*time.Millisecond), 5*time.Second)
	d := n.seqPause
	n.mu.Unlock()
	ch := make(chan struct{})
	time.AfterFunc(d, func() { close(ch) })
	return ch
}

// sameParent reports whether the parent of path (the name of this Node's sequential
// node, now gone) is the parent that node was made in: it exists and is older than the
// node (a parent made again is younger). Not known (no czxid of the node): false.
func (n *Node) sameParent(ctx context.Context, path string) (bool, error) {
	n.mu.Lock()
	czxid := n.czxid
	n.mu.Unlock()
	if czxid == 0 {
		return false, nil
	}
	pst, err := n.client.Exists(ctx, framework.ParentPath(path))
	if err != nil {
		return false, err
	}
	return pst != nil && pst.Czxid < czxid, nil
}

// afterCreate returns what step waits for after a create that returned err: look again
// at once, unless err cannot be retried; then the node's watch, when the node has a path
// and is there (a node found there that could not be written is kept and watched, as
// Curator does). A node that is not there (its create refused: no parent, an ACL) sets
// no watch (see look): await's recheck tries again every recheckEvery.
func (n *Node) afterCreate(ctx context.Context, err error) (<-chan struct{}, error) {
	if err == nil || retry.IsRetryable(err, true) || errors.Is(err, framework.ErrNotConnected) {
		return closedChan, err
	}
	n.mu.Lock()
	path := n.path
	n.mu.Unlock()
	if path == "" {
		return nil, err
	}
	_, next, werr := n.look(ctx, path)
	switch {
	case werr != nil && (retry.IsRetryable(werr, true) || errors.Is(werr, framework.ErrNotConnected)):
		return closedChan, werr // look again at once
	case werr != nil:
		return nil, err
	}
	// Gone, and creating it was refused (no parent, an ACL): next is nil, since trying
	// again at once would spin; a reconnection, a SetData or await's recheck (which
	// finds it missing) brings the next step.
	return next, err
}

// setDirty marks the wanted data as not written.
func (n *Node) setDirty() {
	n.mu.Lock()
	n.dirty = true
	n.mu.Unlock()
}

// create makes the node at path (a re-creation: with its known name and a plain mode).
func (n *Node) create(ctx context.Context, path string, mode framework.CreateMode, protected, again bool) error {
	n.mu.Lock()
	data, gen := bytes.Clone(n.data), n.dataGen
	n.mu.Unlock()
	opts := []framework.CreateOption{framework.WithMode(mode)}
	// A sequential node made again at its name goes only into the parent it was made in
	// (step checked it): no parents are made for it, so that a parent deleted since then
	// is not made again with that name ahead of its counter.
	if !n.o.noParents && !(again && sequential(n.o.mode) && !n.o.protected) {
		opts = append(opts, framework.WithContainerParents())
	}
	var prefix string
	if protected {
		prefix = framework.NewProtectedPrefix() // fresh for each create: a sweep of one never takes another's
		opts = append(opts, framework.WithProtectionPrefix(prefix))
	}
	if !n.token.IsZero() {
		opts = append(opts, framework.WithOwnerToken(n.token))
	}
	if n.o.ttl > 0 {
		opts = append(opts, framework.WithTTL(n.o.ttl))
	}
	// A first create that is given up on (Close) may still be applied: Close then finds
	// the node by its path and its token, or (protected) by its name's prefix. An
	// unprotected sequential one Close finds by its token (seqLeft).
	// Every create is counted until answered: Close looks for the node only then (a
	// re-creation given up on may land after a look that overtook it).
	opts = append(opts, framework.WithInFlight(&n.creates))
	track := !again && !protected && !sequential(mode)
	trackPrefix := !again && protected
	n.mu.Lock()
	n.sent++
	if track {
		n.inflight = path
	} else if trackPrefix {
		n.inflightPrefix = prefix
	}
	n.mu.Unlock()
	p, st, err := n.client.CreateStat(ctx, path, data, opts...)
	if (track || trackPrefix) && ctx.Err() == nil {
		n.mu.Lock()
		n.inflight, n.inflightPrefix = "", ""
		n.mu.Unlock()
	}
	if err != nil && p == "" && !again && !protected && sequential(mode) {
		// The framework looks for the node of an attempt whose reply was lost before it
		// tries again, but a create that failed for good may have made it all the same.
		n.mu.Lock()
		n.seqLeft = true
		n.mu.Unlock()
	}
	switch {
	case p != "" && errors.Is(err, framework.ErrNoNode):
		// Made, and gone before its Stat was read (another's node may have its name by
		// then: the parent was deleted and made again): not ours; the next step makes it
		// again (a sequential one afresh).
		n.mu.Lock()
		if sequential(n.o.mode) {
			n.path = ""
		}
		n.owned, n.czxid = false, 0
		n.mu.Unlock()
		return nil
	case err == nil || (p != "" && st == nil): // created; the Stat may be missing
		var czxid int64
		if st != nil {
			czxid = st.Czxid
		}
		n.mu.Lock()
		n.path, n.owned, n.czxid, n.dirty, n.seqPause = p, true, czxid, false, 0
		n.mu.Unlock()
		n.created(Created{Path: p, Recreated: again})
		return n.syncData(ctx, p, gen, false)
	case errors.Is(err, framework.ErrNodeExists) && !again && sequential(mode):
		// A fresh sequential create refused: the name the parent's counter gave is taken
		// (see errSeqRefused). Nothing to keep; wait before trying again.
		return fmt.Errorf("persistentnode: create %s: %w: %w", path, errSeqRefused, err)
	case errors.Is(err, framework.ErrNodeExists):
		// A node is there: someone else's (another process's, or another Node's on this
		// client), or made by this Node's own create whose reply was lost. Keep it and
		// write the data, as Curator does; it is this Node's own only when its name or
		// token proves it.
		st, mine, err := n.mine(ctx, path)
		if err != nil || st == nil {
			return err // gone again: the next step creates it
		}
		if again && sequential(n.o.mode) && !mine {
			// The name came from the parent's sequence counter: another's node at it
			// reused the name (the parent was deleted and made again). It is not ours
			// to keep or to write: the next step makes a new sequential node of ours.
			n.client.Logger().Info("sequential node's name reused by another; making a new one", "component", "persistentnode", "path", path)
			n.mu.Lock()
			n.path, n.owned, n.czxid = "", false, 0
			n.mu.Unlock()
			return nil
		}
		n.mu.Lock()
		n.path, n.owned, n.czxid = path, mine, 0
		if mine {
			n.czxid = st.Czxid
		}
		n.mu.Unlock()
		if mine { // our create's reply was lost: it is the node we made
			n.created(Created{Path: path, Recreated: again})
		} else {
			n.client.Logger().Info("node found at the path, not made by this persistent node; kept", "component", "persistentnode", "path", path)
			n.initialDone()
		}
		return n.syncData(ctx, path, 0, true)
	default:
		return err
	}
}

// syncData writes the wanted data into the node when they changed since generation gen
// was created (or always, with force), bound to the node as writeData says: a node no
// longer there, or (sequential) not this Node's, is not written, and the next step makes
// it again.
func (n *Node) syncData(ctx context.Context, path string, gen uint64, force bool) error {
	if err := n.lockWrite(ctx); err != nil {
		n.setDirty()
		return err
	}
	defer n.unlockWrite()
	n.mu.Lock()
	data, cur := bytes.Clone(n.data), n.dataGen
	n.mu.Unlock()
	if !force && cur == gen {
		return nil
	}
	err := n.writeData(ctx, path, func(v int32) (*framework.Stat, error) { return n.client.SetData(ctx, path, data, v) })
	if err != nil && !errors.Is(err, framework.ErrNoNode) {
		n.mu.Lock()
		n.dirty = true
		n.mu.Unlock()
		return err
	}
	return nil
}

// initialDone marks the first creation done.
func (n *Node) initialDone() {
	select {
	case <-n.createdCh:
	default:
		close(n.createdCh)
	}
}

// created marks the first creation done and hands the event to the listener goroutine.
func (n *Node) created(ev Created) {
	n.initialDone()
	n.mu.Lock()
	// A new sequential node made in place of one that is gone is a re-creation too.
	ev.Recreated = ev.Recreated || n.madeOnce
	n.madeOnce = true
	n.events = append(n.events, ev)
	n.mu.Unlock()
	select {
	case n.evSig <- struct{}{}:
	default:
	}
}

// dispatch tells the listeners each creation, one call at a time, in order, until Close
// or the client's Close.
func (n *Node) dispatch() {
	defer close(n.dispDone)
	for {
		n.mu.Lock()
		if len(n.events) == 0 {
			n.mu.Unlock()
			select {
			case <-n.evSig:
				continue
			case <-n.stop:
				return
			case <-n.client.Done():
				return
			}
		}
		ev := n.events[0]
		n.events = n.events[1:]
		fns := make([]func(Created), 0, len(n.listeners))
		for _, id := range slices.Sorted(maps.Keys(n.listeners)) {
			fns = append(fns, n.listeners[id])
		}
		n.mu.Unlock()
		for _, fn := range fns {
			if stopped(n.stop, n.client.Done()) {
				return
			}
			n.call(fn, ev)
		}
	}
}

// call tells one listener; a listener that panics is logged and the others are told.
func (n *Node) call(fn func(Created), ev Created) {
	defer framework.LogPanic(n.client.Logger(), "persistent node listener panicked", "component", "persistentnode", "path", ev.Path)
	fn(ev)
}

// Close stops keeping the node and deletes it when it is provably this Node's own: it
// carries this Node's protected name or owner token (and, for an ephemeral node, is owned
// by the current session), also when it was made by a create that was still in flight
// when Close stopped waiting for it, or by a first create that failed. A node of another
// Node, on this client or elsewhere, stays. A delete that fails for a
// connection-class reason is retried in the background (guaranteed delete) and reported.
// When the look itself fails (the connection is lost or stalled), it is left to the
// background and Close returns nil: a protected node is deleted by its name (guaranteed
// delete); otherwise a cleanup of the client's looks again once it can and deletes the
// node at the path when it carries this Node's token, bound to the czxid it then reads,
// so that a node made by a create whose answer was lost (a re-creation, a first create
// given up on: the Node never read its czxid) goes too, and a node made at the path by
// someone else stays. The client's WaitGuaranteedDeletes waits for either.
// The Node watches its node with a data watch, set only while the node is there, so Close
// leaves no watch on a path where no node is: one on a node that stays (another's, a
// TTLNode's container left to the server) stays registered on the server until that node
// changes or goes, or the session ends (go-zookeeper cannot remove a watch). Close may be called many times, also
// from a listener.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.state == stateClosed {
		// Closed already, or being closed: from outside, wait as the first Close does (for
		// its work, the loop and the listener goroutine, which may run the listener that
		// closed it first).
		done, dispDone := n.done, n.dispDone
		n.mu.Unlock()
		waitUnlessInside(n.g, n.closeDone)
		waitFor(done)
		waitUnlessInside(n.g, dispDone)
		return nil
	}
	prev := n.state
	n.state = stateClosed
	n.mu.Unlock()
	defer close(n.closeDone)
	if prev == stateLatent {
		return nil
	}
	n.unlisten()
	close(n.stop)
	waitFor(n.done)
	waitUnlessInside(n.g, n.dispDone)
	if !n.deleteOnClose {
		return nil
	}
	return n.deleteOwn()
}

// mine reads the node at path: its Stat (nil when there is none) and whether it is
// provably this Node's own: it carries this Node's protected name or its token, and, of
// an ephemeral mode, it is owned by the current session (one of an older session of ours
// goes by itself). Neither the session nor a czxid seen once proves it: another Node on
// the same client has the same session, and makes the node again at the same path.
func (n *Node) mine(ctx context.Context, path string) (*framework.Stat, bool, error) {
	var st *framework.Stat
	var ok bool
	var err error
	if n.o.protected {
		st, err = n.client.Exists(ctx, path)
		ok = st != nil
	} else {
		st, ok, err = n.client.OwnedBy(ctx, path, n.token)
		if errors.Is(err, framework.ErrNoAuth) {
			// Its ACL cannot be read (no READ or ADMIN for us): not provably its own.
			st, err = n.client.Exists(ctx, path)
			ok = false
		}
	}
	if err != nil || st == nil {
		return nil, false, err
	}
	if ephemeral(n.o.mode) && st.EphemeralOwner != n.client.SessionID() {
		ok = false
	}
	return st, ok, nil
}

// leftNode is a node that a failed first create of an unprotected sequential node made.
type leftNode struct {
	path string
	st   *framework.Stat
}

// leftNodes returns the nodes carrying this Node's token that a first create of an
// unprotected sequential node made (seqLeft).
func (n *Node) leftNodes(ctx context.Context) ([]leftNode, error) {
	paths, err := n.client.FindOwned(ctx, n.base, n.token)
	if err != nil {
		return nil, err
	}
	var out []leftNode
	for _, p := range paths {
		st, ok, err := n.client.OwnedBy(ctx, p, n.token)
		if err != nil {
			return nil, err
		}
		if st != nil && ok {
			out = append(out, leftNode{p, st})
		}
	}
	return out, nil
}

// adoptLeft takes as its own a node that an earlier first create of an unprotected
// sequential node made although it failed, and deletes any other (an ephemeral one of an
// older session, a second one): it reports whether it took one.
func (n *Node) adoptLeft(ctx context.Context) (bool, error) {
	left, err := n.leftNodes(ctx)
	if err != nil {
		return false, err
	}
	var took *leftNode
	for i, l := range left {
		if took == nil && (!ephemeral(n.o.mode) || l.st.EphemeralOwner == n.client.SessionID()) {
			took = &left[i]
			continue
		}
		if err := n.client.Delete(ctx, l.path, framework.WithMaxCzxid(l.st.Czxid), framework.Guaranteed(), framework.Quietly()); err != nil {
			return false, err
		}
	}
	n.mu.Lock()
	n.seqLeft = false
	if took != nil {
		n.path, n.owned, n.czxid, n.dirty = took.path, true, took.st.Czxid, false
	}
	n.mu.Unlock()
	if took == nil {
		return false, nil
	}
	n.client.Logger().Info("node of a failed create found by its token; taken as this node's", "component", "persistentnode", "path", took.path)
	n.created(Created{Path: took.path})
	return true, n.syncData(ctx, took.path, 0, true)
}

// deleteOwn deletes the node if it is provably this Node's own.
func (n *Node) deleteOwn() error {
	n.mu.Lock()
	path := n.path
	sweep := path == "" && n.seqLeft
	var prefix string
	if path == "" { // the first create was given up on: it may be there
		path, prefix = n.inflight, n.inflightPrefix
	}
	n.path, n.inflight, n.inflightPrefix, n.seqLeft = "", "", "", false
	n.mu.Unlock()
	if path == "" && prefix == "" && !sweep {
		return nil
	}
	// Wait for the answer to any create given up on (or its connection's loss) before
	// looking: a look sent at once could be handed to the connection ahead of the create,
	// find nothing, and the create then leave the node until the session ends.
	if n.creates.Pending() {
		n.client.Logger().Debug("close waits for the create it gave up on", "component", "persistentnode", "path", path)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), cleanupTimeout)
	if err := n.creates.Wait(wctx); err != nil {
		n.client.Logger().Warn("a create given up on did not answer; looking for its node all the same", "component", "persistentnode", "path", path, "err", err)
	}
	wcancel()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if prefix != "" { // a first create of a protected node given up on: find it by its name
		return n.deleteProtected(ctx, prefix)
	}
	if sweep { // a failed first create of an unprotected sequential node (FindOwned syncs)
		left, err := n.leftNodes(ctx)
		if errors.Is(err, framework.ErrClosed) && ephemeral(n.o.mode) {
			return nil // the client closed its session, which took the node
		}
		if err != nil {
			return fmt.Errorf("persistentnode: close %s: %w", n.base, err)
		}
		var errs []error
		for _, l := range left {
			if err := n.client.Delete(ctx, l.path, framework.WithMaxCzxid(l.st.Czxid), framework.Guaranteed(), framework.Quietly()); err != nil {
				errs = append(errs, fmt.Errorf("persistentnode: close %s: %w", l.path, err))
			}
		}
		return errors.Join(errs...)
	}
	looked, err := n.deleteIfMine(ctx, path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, framework.ErrClosed) && ephemeral(n.o.mode):
		return nil // the client closed its session, which took the node
	case looked, errors.Is(err, framework.ErrClosed), !unreachable(err):
		return fmt.Errorf("persistentnode: close %s: %w", path, err)
	case n.o.protected:
		// The look failed (the connection is lost or stalled, say), but the name proves
		// the node ours: hand its delete to the background retrier. It is not bound to a
		// czxid: a re-creation whose answer was lost made a node at the name with one
		// this Node does not know, and no one else makes a node at it.
		if err := n.client.Delete(ctx, path, framework.Guaranteed(), framework.Quietly()); err != nil {
			return fmt.Errorf("persistentnode: close %s: %w", path, err)
		}
		return nil
	case n.deleteLater(path):
		// The look failed: a cleanup looks again once it can, and deletes the node at
		// path when it carries this Node's token, whatever its czxid (a re-creation or a
		// first create given up on, whose answer was lost, may have made it).
		n.client.Logger().Debug("close leaves the look at its node to a cleanup in the background", "component", "persistentnode", "path", path, "err", err)
		return nil
	default:
		return fmt.Errorf("persistentnode: close %s: %w", path, err)
	}
}

// unreachable reports whether err says that the server could not be asked (a connection
// lost or stalled, a request timed out), so that asking again later may succeed.
func unreachable(err error) bool {
	return retry.IsRetryable(err, true) || errors.Is(err, framework.ErrNotConnected) || errors.Is(err, context.DeadlineExceeded)
}

// deleteIfMine looks at the node at path and deletes it when it is provably this Node's
// own (mine), bound to the czxid read (a node made at the path later stays). It reports
// whether it looked: if not, err is the look's; if so, the delete's (nil when the node
// is gone or not ours), one that failed for a connection-class reason being handed to
// the client's guaranteed-delete worker. No version: the czxid alone proves the node
// ours, and a write to it after Close must not make a queued delete give up (BadVersion
// would end the job); a version that changed between the read and the delete is read
// again (framework.WithMaxCzxid).
func (n *Node) deleteIfMine(ctx context.Context, path string) (looked bool, err error) {
	// A create whose reply was lost leaves the client's session behind it: after a
	// reconnection its member may not have applied it yet. Sync brings that member up to
	// date before the look (reads are not linearizable across members). A sync that
	// fails leaves the look below to report why.
	_ = n.client.Sync(ctx, path)
	st, mine, err := n.mine(ctx, path)
	if err != nil {
		return false, err
	}
	if st == nil || !mine {
		return true, nil // gone, or not ours: someone else's, another Node's, or of an ended session of ours
	}
	err = n.client.Delete(ctx, path, framework.WithMaxCzxid(st.Czxid), framework.Guaranteed())
	if errors.Is(err, framework.ErrNoNode) {
		return true, nil
	}
	return true, err
}

// deleteLater runs a cleanup of the client's (GoCleanup: the client's
// WaitGuaranteedDeletes and Close wait for it) for a Close whose look at the node failed:
// it waits, with no bound but the client's life, for the answer to the creates given up
// on (go-zookeeper fails them when the connection drops), then looks at the node at path
// and deletes it when it carries this Node's token (deleteIfMine), looking again after a
// failure of the connection's until it has looked or the client closed. The token, not a
// czxid this Node read, binds the delete: a re-creation whose answer was lost (or a
// first create given up on) made a node whose czxid the Node never read, and only this
// Node makes nodes with its token. It reports false, running nothing, once the client is
// closed.
func (n *Node) deleteLater(path string) bool {
	c := n.client
	return c.GoCleanup(func() {
		ctx, release := untilStopped(nil, c.Done())
		defer release()
		if err := n.creates.Wait(ctx); err != nil {
			return // the client closed
		}
		for {
			lctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
			looked, err := n.deleteIfMine(lctx, path)
			cancel()
			switch {
			case ctx.Err() != nil, errors.Is(err, framework.ErrClosed):
				return
			case looked || !unreachable(err):
				if err != nil {
					c.Logger().Warn("node not deleted after close", "component", "persistentnode", "path", path, "err", err)
				}
				return
			}
			c.Logger().Debug("node not looked at after close; trying again", "component", "persistentnode", "path", path, "err", err)
			timer := time.NewTimer(cleanupRetryPause)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return
			}
		}
	})
}

// deleteProtected deletes the node a first create of a protected node that was given up
// on made, found by its protected prefix among the parent's children: its name proves it
// this Node's own. It runs once that create was answered (or its wait gave up); the
// framework's own sweep of the prefix covers what this one cannot reach.
func (n *Node) deleteProtected(ctx context.Context, prefix string) error {
	parent := framework.ParentPath(n.base)
	if strings.HasSuffix(n.base, "/") { // a sequential create of "/a/": the name is the prefix
		parent = strings.TrimSuffix(n.base, "/")
	}
	_ = n.client.Sync(ctx, parent) // a create answered by a connection loss: bring the member up to date
	kids, _, err := n.client.Children(ctx, parent)
	switch {
	case errors.Is(err, framework.ErrNoNode):
		return nil
	case errors.Is(err, framework.ErrClosed) && ephemeral(n.o.mode):
		return nil // the client closed its session, which took the node
	case err != nil:
		return fmt.Errorf("persistentnode: close %s: %w", n.base, err)
	}
	var errs []error
	for _, k := range kids {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		p := framework.JoinPath(parent, k)
		if err := n.client.Delete(ctx, p, framework.Guaranteed(), framework.Quietly()); err != nil {
			errs = append(errs, fmt.Errorf("persistentnode: close %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// untilStopped returns a context that ends when stop or clientDone is closed, for a loop
// of Node or TTLNode, and a function that releases it once the loop is over.
func untilStopped(stop, clientDone <-chan struct{}) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		select {
		case <-stop:
		case <-clientDone:
		case <-finished:
		}
		cancel()
	}()
	return ctx, func() { close(finished); cancel() }
}

// stopped reports whether stop or clientDone is closed: a loop checks it before each
// round of work, since a Close made on the loop's own goroutine (from a listener) ends
// the loop's context only a moment later.
func stopped(stop, clientDone <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	case <-clientDone:
		return true
	default:
		return false
	}
}

// waitUnlessInside waits until done is closed, unless the caller runs on one of g's
// goroutines (a listener that calls Close), which done may be waiting for.
func waitUnlessInside(g *framework.Goroutines, done <-chan struct{}) {
	if !g.Inside() {
		waitFor(done)
	}
}

// waitFor waits until done is closed; a nil done (never started) is not waited for.
func waitFor(done <-chan struct{}) {
	if done != nil {
		<-done
	}
}
