package leader

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
)

// latchName is the marker in latch node names, as Curator's LeaderLatch.
const latchName = "latch-"

// cleanupTimeout bounds the deletes done on Close and after failures, on a context
// detached from the caller's.
const cleanupTimeout = 10 * time.Second

// Backoff after a failed step of the election loop: it starts here and doubles up to
// maxBackoff.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// CloseMode says whether Latch.Close tells the listeners that leadership ended.
type CloseMode int

const (
	// CloseSilent: Close does not call the listeners (Curator's CloseMode.SILENT). The
	// current Term still ends (its Done closes) before the node is deleted. A term that
	// had ended before (leadership may be lost) is still told, as at any other time.
	CloseSilent CloseMode = iota
	// CloseNotifyLeader: when the latch is leader at Close, the listeners are called
	// with false before Close returns (Curator's CloseMode.NOTIFY_LEADER).
	CloseNotifyLeader
)

// LatchOption configures a Latch.
type LatchOption func(*latchOptions)

type latchOptions struct {
	closeMode CloseMode
	onRevoke  func(*Latch)
}

// WithCloseMode sets what Close tells the listeners. The default is CloseSilent, as
// Curator's.
func WithCloseMode(m CloseMode) LatchOption { return func(o *latchOptions) { o.closeMode = m } }

// WithLatchRevocationListener makes the latch's leadership revocable (CURATOR-171): fn is
// called with the latch (on a goroutine of its own) when, while it leads, someone asks it
// to let go by writing __REVOKE__ into its latch node (Revoke, `zkcurator lock revoke`,
// Curator's Revoker.attemptRevoke). A request made before the latch leads is heard once it
// leads. Letting go is up to fn: Close leaves the election, and the next participant
// leads at once. A panic in fn is logged (at Error, on the client's logger). The default
// is not revocable (the request is ignored). The latch node
// holds __REVOKE__ instead of the participant id from then on: Participants shows that.
func WithLatchRevocationListener(fn func(*Latch)) LatchOption {
	return func(o *latchOptions) { o.onRevoke = fn }
}

const (
	stateLatent = iota
	stateStarted
	stateClosed
)

// Latch is Curator's LeaderLatch: one participant in an election on a path. Once started
// it stays in the election until closed, and is leader while its node is the first in
// line. It is safe for concurrent use.
type Latch struct {
	client *framework.Client
	path   string
	id     string
	opts   latchOptions

	mu        sync.Mutex
	state     int
	node      string        // our latch node, "" when none
	nodeGen   uint64        // the client generation node was created in
	nodeSid   int64         // the client's session when node was created
	nodeCzxid int64         // node's czxid once read as the session's, else 0
	term      *Term         // the current term while leader
	changed   chan struct{} // closed and replaced whenever a term begins or ends
	closed    chan struct{} // closed by Close
	closeDone chan struct{} // closed when the first Close has done its work
	cancel    context.CancelFunc
	runDone   chan struct{}
	starting  chan struct{} // closed when a Start has returned (its node made and kept, or cleaned up)
	startErr  error         // what Start's clean-up after a Close during its create failed with
	// recreateErr: the election loop's create of the node again was given up past
	// Close's bound (a node it made is deleted in the background): Close reports it.
	recreateErr error
	// fresh: node was made since the election loop last listed (read by the loop only,
	// set before it starts and by it): the next listing is sent after that create.
	fresh     bool
	unlisten  func()
	kick      chan struct{} // a connection state changed: look again
	dispStop  chan struct{}
	dispDone  chan struct{}
	disp      *framework.Goroutines // runs the listener goroutine (Close from a listener)
	listenMu  sync.Mutex
	listeners []*latchListener
	events    []bool
	evSig     chan struct{}
}

type latchListener struct {
	fn      func(isLeader bool)
	removed atomic.Bool
}

// NewLatch returns a latch for participant id on path. It checks its arguments (a nil
// client, an invalid path, an empty id) but does not talk to ZooKeeper: call Start.
func NewLatch(c *framework.Client, path, id string, opts ...LatchOption) (*Latch, error) {
	if err := validate(c, path, id); err != nil {
		return nil, err
	}
	var o latchOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.closeMode != CloseSilent && o.closeMode != CloseNotifyLeader {
		return nil, fmt.Errorf("leader: %w: unknown close mode %d", framework.ErrInvalidArgument, o.closeMode)
	}
	return &Latch{
		client:    c,
		path:      path,
		id:        id,
		opts:      o,
		changed:   make(chan struct{}),
		closed:    make(chan struct{}),
		closeDone: make(chan struct{}),
		disp:      framework.NewGoroutines(),
		kick:      make(chan struct{}, 1),
		evSig:     make(chan struct{}, 1),
	}, nil
}

// Path returns the election's path.
func (l *Latch) Path() string { return l.path }

// ID returns the participant id.
func (l *Latch) ID() string { return l.id }

// Start enters the election: it creates the latch node (within ctx), then keeps the
// latch in the election on a goroutine of its own until Close. When Start returns nil the
// participant is in line (Participants lists it); it may already be leader. A Start that
// fails leaves nothing behind and may be tried again; starting twice is an error. A Close
// while Start creates the node makes Start delete the node it made and return ErrClosed;
// Close waits for that (see Close). Start itself returns when ctx ends, also then: the
// create Close waits for, and the delete of what it made, go on in the background.
func (l *Latch) Start(ctx context.Context) error {
	l.mu.Lock()
	switch l.state {
	case stateClosed:
		l.mu.Unlock()
		return ErrClosed
	case stateStarted:
		l.mu.Unlock()
		return ErrAlreadyStarted
	}
	l.state = stateStarted // reserved while we create the node
	starting := make(chan struct{})
	l.starting = starting
	l.mu.Unlock()

	res := make(chan error, 1)
	go func() {
		defer close(starting) // a Close meanwhile waits for this, the clean-up included
		res <- l.enter(ctx)
	}()
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
	}
	// ctx ended. Before a Close, the create ends with it (createContext), and so does
	// enter, at once. After a Close, the create goes on within Close's bound, and the
	// node it made is deleted: Close waits for that, Start does not.
	select {
	case err := <-res:
		return err
	case <-l.closed:
		return fmt.Errorf("%w: %w", ErrClosed, ctx.Err())
	}
}

// enter is Start's work: it creates the latch node and starts the election loop, or,
// when Close came meanwhile, deletes the node it made and records what Close must say.
func (l *Latch) enter(ctx context.Context) error {
	cctx, stop := l.createContext(ctx)
	node, gen, sid, err := l.create(cctx)
	cause := context.Cause(cctx) // why the create's context ended, if it did
	stop()
	l.mu.Lock()
	if err != nil || l.state == stateClosed {
		closed := l.state == stateClosed
		if !closed {
			l.state = stateLatent
		}
		l.mu.Unlock()
		var cerr error
		switch {
		case node != "": // closed while we created it: Close waits for this delete
			if cerr = l.deleteNode(ctx, node, 0, sid); cerr != nil {
				cerr = fmt.Errorf("leader: close %s: deleting the latch node Start made: %w", l.path, cerr)
			}
		case closed && errors.Is(cause, errCloseBound):
			// Close's bound ended the create: a node it made is deleted in the background
			// (a protected name) once its answer comes.
			cerr = fmt.Errorf("leader: close %s: Start's create of the latch node did not resolve within %v: %w", l.path, cleanupTimeout, err)
		case closed && errors.Is(cause, errCreateGivenUp):
			// Start's context ended the create just before the Close: the same.
			cerr = fmt.Errorf("leader: close %s: Start's create of the latch node did not resolve (Start's context ended; a node it made is deleted in the background once its answer comes): %w", l.path, err)
		}
		if cerr != nil {
			l.mu.Lock()
			l.startErr = cerr
			l.mu.Unlock()
		}
		switch {
		case err == nil:
			err = ErrClosed
		case closed:
			err = fmt.Errorf("%w: %w", ErrClosed, err)
		}
		return err
	}
	defer l.mu.Unlock()
	l.node, l.nodeGen, l.nodeSid, l.nodeCzxid, l.fresh = node, gen, sid, 0, true
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.runDone = make(chan struct{})
	l.dispStop = make(chan struct{})
	l.dispDone = make(chan struct{})
	l.unlisten = l.client.AddListener(func(framework.State) { l.poke() })
	l.disp.Go(l.dispatch)
	go l.run(runCtx)
	return nil
}

func (l *Latch) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Why createContext ended a create: the context's cause.
var (
	errCloseBound    = errors.New("leader: Close's bound for a create in flight ended")
	errCreateGivenUp = errors.New("leader: the create's context ended before a Close")
)

// createContext returns a context for the create of a latch node: it ends with parent
// when parent ends before Close (cause errCreateGivenUp), or cleanupTimeout after Close
// (cause errCloseBound), whether parent ended meanwhile or not. Close waits for a create
// in flight (its reply may say that the node exists), and this is the bound of that wait.
// stop must be called once the create returned.
func (l *Latch) createContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-parent.Done():
			select {
			case <-l.closed: // Close waits for this create: it goes on, bounded
			default:
				cancel(fmt.Errorf("%w: %w", errCreateGivenUp, context.Cause(parent)))
				return
			}
		case <-l.closed:
		}
		t := time.NewTimer(cleanupTimeout)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
			cancel(errCloseBound)
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// create makes a new latch node and returns it with the generation and the session it
// was made in (those of the client when the create was sent).
func (l *Latch) create(ctx context.Context) (string, uint64, int64, error) {
	gen, sid := l.client.Session()
	node, err := l.client.Create(ctx, framework.JoinPath(l.path, latchName), []byte(l.id),
		framework.WithMode(framework.EphemeralSequential), framework.WithProtection(), framework.WithContainerParents())
	if err != nil {
		return "", 0, 0, fmt.Errorf("leader: create latch node under %s: %w", l.path, err)
	}
	return node, gen, sid, nil
}

// deleteNode deletes our node (guaranteed) on a context detached from ctx, only as that
// node: bound to its czxid and to session sid, which made it (the old session too, when
// the client gave it up and the server may still hold it). When the latch never read
// the node as its session's (czxid 0), the node at the path is read first and deleted
// only if sid or the client's session now owns it; when that read gets no answer, the
// delete (guaranteed) reads the node again first and deletes it only if sid owns it. A
// node that is not ours, or went with its session, is left alone.
func (l *Latch) deleteNode(ctx context.Context, node string, czxid, sid int64) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	owner := sid
	if czxid == 0 || sid == 0 { // sid 0: made before the client's first session was known
		_, cur := l.client.Session()
		st, err := l.client.Exists(cctx, node)
		switch {
		case errors.Is(err, framework.ErrClosed):
			return nil // the node went with the session
		case err != nil:
			if czxid == 0 {
				czxid = math.MaxInt64 // any czxid: the delete reads the node for its owner
			}
			if owner == 0 {
				owner = cur
			}
		case st == nil || st.EphemeralOwner == 0 || (st.EphemeralOwner != sid && st.EphemeralOwner != cur):
			return nil // gone, or another's
		case czxid != 0 && st.Czxid != czxid:
			return nil // another node made at the name since
		default:
			czxid, owner = st.Czxid, st.EphemeralOwner
		}
		if owner == 0 {
			return nil // no session known to own it: it is not proven ours
		}
	}
	err := l.client.Delete(cctx, node, framework.Quietly(), framework.Guaranteed(),
		framework.WithMaxCzxid(czxid), framework.OwnedBy(owner))
	if errors.Is(err, framework.ErrClosed) || errors.Is(err, framework.ErrNoNode) {
		return nil // the node went with the session, or is not there as ours
	}
	return err
}

// run is the election loop: Curator's checkLeadership, re-run whenever the node ahead of
// ours goes, our own node goes, the connection state changes or leadership may be lost.
func (l *Latch) run(ctx context.Context) {
	defer close(l.runDone)
	backoff := minBackoff
	for {
		err := l.step(ctx)
		if ctx.Err() != nil {
			return
		}
		select {
		case <-l.client.Done():
			l.endTerm(true)
			return
		default:
		}
		if err == nil {
			backoff = minBackoff
			continue
		}
		l.client.Logger().Warn("latch election step failed", "component", "leader", "path", l.path, "id", l.id, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-l.client.Done():
		case <-l.kick:
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// step looks once at the election and waits for the next reason to look again.
func (l *Latch) step(ctx context.Context) error {
	c := l.client
	if err := c.BlockUntilConnected(ctx); err != nil {
		return err
	}
	gen, sid := c.Session()
	l.mu.Lock()
	node, nodeGen, nodeCzxid, nodeSid := l.node, l.nodeGen, l.nodeCzxid, l.nodeSid
	l.mu.Unlock()
	if node != "" && nodeGen != gen {
		// Made in an earlier generation: gone with its session, or to be treated so.
		l.endTerm(true)
		if err := l.deleteNode(ctx, node, nodeCzxid, nodeSid); err != nil {
			return err
		}
		l.setNode("", 0, 0)
		node = ""
	}
	if node == "" {
		// Not cancelled by Close at once: Close waits (bounded) for the answer, so that
		// a node the create made is known and deleted before Close returns.
		cctx, stop := l.createContext(context.WithoutCancel(ctx))
		n, g, s, err := l.create(cctx)
		cause := context.Cause(cctx)
		stop()
		if err != nil {
			if errors.Is(cause, errCloseBound) {
				// Given up past Close's bound: a node it made is deleted in the
				// background (a protected name) once its answer comes. Close says so.
				l.mu.Lock()
				l.recreateErr = fmt.Errorf("leader: close %s: the latch's create of its node again did not resolve within %v: %w", l.path, cleanupTimeout, err)
				l.mu.Unlock()
			}
			return err
		}
		if ctx.Err() != nil { // closing: Close deletes what it finds in l.node
			l.setNode(n, g, s)
			return ctx.Err()
		}
		l.setNode(n, g, s)
		l.fresh = true
		return nil // look again, with the generation checked
	}

	fresh := l.fresh
	l.fresh = false
	kids, _, err := c.Children(ctx, l.path)
	if err != nil && !errors.Is(err, framework.ErrNoNode) {
		return err
	}
	// Only latch nodes take part: a child without the latch name (an operator's "0",
	// which would sort ahead of every sequence number) neither leads nor queues, as
	// Participants, Leader and Observe leave it out.
	kids = slices.DeleteFunc(slices.Clone(kids), func(k string) bool { return !strings.Contains(k, latchName) })
	framework.SortBySequence(kids, latchName)
	ours := slices.Index(kids, framework.NodeName(node))
	if ours < 0 {
		// Our node is gone (deleted, or with a session we no longer have): start over.
		l.endTerm(true)
		l.setNode("", 0, 0)
		return nil
	}
	if ours > 0 {
		l.endTerm(true)
		_, _, w, err := c.GetDataW(ctx, framework.JoinPath(l.path, kids[ours-1]))
		if errors.Is(err, framework.ErrNoNode) {
			return nil // gone already: look again
		}
		if err != nil {
			return err
		}
		select {
		case <-w.Done():
		case <-l.kick:
		case <-ctx.Done():
		case <-c.Done():
		}
		return nil
	}

	// First in line. Claim leadership only once our node is seen to belong to the
	// session we have now, in the generation it was made in. A listing right after our
	// own create shows the election as of that write; any other may come from a server
	// that lags (a follower cut off from its peers answers from its old state): sync
	// first, so that the read of our node sees every write committed before. The nodes
	// ahead of ours that the listing showed gone cannot come back; ours may be gone.
	if !fresh {
		if err := c.Sync(ctx, l.path); err != nil {
			return err
		}
	}
	loss := c.LossSignal(gen)
	data, st, w, err := c.GetDataW(ctx, node)
	if errors.Is(err, framework.ErrNoNode) {
		l.endTerm(true)
		l.setNode("", 0, 0)
		return nil
	}
	if errors.Is(err, framework.ErrNoAuth) {
		// A node we may not read is at our name: not ours if another session owns it
		// (an exists needs no permission).
		if st, xerr := c.Exists(ctx, node); xerr == nil && st != nil && st.EphemeralOwner != sid && !isClosed(loss) {
			l.endTerm(true)
			l.setNode("", 0, 0)
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if !l.ours(st, sid, nodeCzxid, loss) {
		return nil
	}
	l.mu.Lock()
	if l.node == node {
		l.nodeCzxid, l.nodeSid = st.Czxid, sid
	}
	l.mu.Unlock()
	t := l.currentTerm()
	if t == nil || t.node != node || isClosed(t.Done()) {
		l.endTerm(true)
		t = newTerm(node, st.Czxid, sid, loss, l.termLost)
		t.client = l.client // its guard names the node with this client's namespace and chroot
		if !l.beginTerm(t) {
			return ErrClosed
		}
	}
	l.revoked(data)
	return l.lead(ctx, t, w, loss)
}

// lead watches our node while term t lasts (w is the data watch the claim's read set).
// A write into the node (a revocation request, or anyone's) makes it read the node again
// and keep watching it, as long as that read still shows our node.
func (l *Latch) lead(ctx context.Context, t *Term, w *framework.Watch, loss <-chan struct{}) error {
	c := l.client
	for {
		select {
		case <-w.Done():
			if w.Event().Type == zk.EventNodeDataChanged {
				// Someone wrote into our node (a revocation request?): keep watching it.
				data, st, nw, err := c.GetDataW(ctx, t.node)
				if err == nil {
					if !l.ours(st, t.sid, t.czxid, loss) {
						return nil
					}
					l.revoked(data)
					w = nw
					continue
				}
				if !errors.Is(err, framework.ErrNoNode) {
					return err
				}
			}
			// Deleted, or the session ended: leadership is gone.
			l.endTerm(true)
			return nil
		case <-t.Done():
			l.endTerm(true)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-c.Done():
			return framework.ErrClosed
		}
	}
}

// ours reports whether st, read at our node's name while the client's loss signal was
// loss, shows the node this latch made and may lead on: owned by session sid and, once
// its czxid is known (czxid non-zero), created at that czxid. Otherwise it ends the
// term. When the session changed or may be lost, the node is kept (the next step looks
// again from the top); when the node is another's (another client, or another instance
// on this client, deleted ours and made one at its name), it is forgotten: never led on,
// never deleted.
func (l *Latch) ours(st *framework.Stat, sid, czxid int64, loss <-chan struct{}) bool {
	switch {
	case isClosed(loss):
		l.endTerm(true)
		return false
	case st.EphemeralOwner != sid || (czxid != 0 && st.Czxid != czxid):
		l.endTerm(true)
		l.setNode("", 0, 0)
		return false
	}
	return true
}

// revoked calls the revocation listener, if any, when data (our node's, read while we
// lead) asks us to let go.
func (l *Latch) revoked(data []byte) {
	if fn := l.opts.onRevoke; fn != nil && locks.IsRevokeRequest(data) {
		// On a goroutine the client's Close waits for; a panic there is logged.
		l.client.Go(func() {
			defer framework.LogPanic(l.client.Logger(), "latch revocation listener panicked", "component", "leader", "path", l.path, "id", l.id)
			fn(l)
		})
	}
}

func (l *Latch) setNode(node string, gen uint64, sid int64) {
	l.mu.Lock()
	l.node, l.nodeGen, l.nodeSid, l.nodeCzxid = node, gen, sid, 0
	l.mu.Unlock()
}

func (l *Latch) currentTerm() *Term {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term
}

// beginTerm makes t the current term and tells the listeners. It fails when the latch is
// closing.
func (l *Latch) beginTerm(t *Term) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == stateClosed {
		t.end()
		return false
	}
	l.term = t
	close(l.changed)
	l.changed = make(chan struct{})
	l.queueEvent(true)
	return true
}

// endTerm ends the current term, if any, and tells the listeners when notify is set, or
// when the term had ended already (on the loss of the session: Close, silent, does not
// hide that end).
func (l *Latch) endTerm(notify bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endTermLocked(notify)
}

// termLost is called when the client's loss signal ended term t (its contexts are
// cancelled and its Done is closed): while t is still the current term, it ends it here
// and tells the listeners at once, wherever the election loop is (waiting in its backoff
// or for a connection, which do not watch the term). Once the loop or Close ended t, it
// does nothing: the listeners hear false once per term, after its true.
func (l *Latch) termLost(t *Term) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == t {
		l.endTermLocked(true)
	}
}

// endTermLocked is endTerm with l.mu held.
func (l *Latch) endTermLocked(notify bool) {
	if l.term == nil {
		return
	}
	notify = notify || isClosed(l.term.Done())
	l.term.end()
	l.term = nil
	close(l.changed)
	l.changed = make(chan struct{})
	if notify {
		l.queueEvent(false)
	}
}

// HasLeadership reports whether this participant is leader now: it holds a term whose
// Done has not closed.
func (l *Latch) HasLeadership() bool {
	t := l.currentTerm()
	return t != nil && !isClosed(t.Done())
}

// Term returns the current term of leadership, or ErrNotLeader.
func (l *Latch) Term() (*Term, error) {
	t := l.currentTerm()
	if t == nil || isClosed(t.Done()) {
		return nil, fmt.Errorf("%w: %s on %s", ErrNotLeader, l.id, l.path)
	}
	return t, nil
}

// Token returns the fencing token of the current term (see Term.Token), or ErrNotLeader.
func (l *Latch) Token(ctx context.Context) (int64, error) {
	t, err := l.Term()
	if err != nil {
		return 0, err
	}
	return t.Token(ctx)
}

// Await waits until this participant is leader, ctx ends, or the latch or the client is
// closed. It returns nil when leader, ctx.Err() (wrapped) on cancellation, ErrClosed
// after Close and ErrNotStarted before Start. Leadership can end right after Await
// returns: use Term for the Done channel of the term. While this participant leads,
// Await returns nil even if ctx has ended: a loop that awaits leadership again after each
// term should test ctx itself (for ctx.Err() == nil { … }) and Close the latch to step
// down.
func (l *Latch) Await(ctx context.Context) error {
	for {
		l.mu.Lock()
		state, t, ch := l.state, l.term, l.changed
		l.mu.Unlock()
		switch {
		case state == stateClosed:
			return ErrClosed
		case state == stateLatent:
			return ErrNotStarted
		case t != nil && !isClosed(t.Done()):
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("leader: await %s: %w", l.path, ctx.Err())
		case <-l.closed:
			return ErrClosed
		case <-l.client.Done():
			return framework.ErrClosed
		}
	}
}

// Participants returns the participants in line, the leader first.
func (l *Latch) Participants(ctx context.Context) ([]Participant, error) {
	return participants(ctx, l.client, l.path, latchName)
}

// Leader returns the participant first in line (the leader), or ErrNoLeader.
func (l *Latch) Leader(ctx context.Context) (Participant, error) {
	ps, err := l.Participants(ctx)
	return first(ps, err, l.path)
}

// Node returns the path of our latch node ("" when we have none now).
func (l *Latch) Node() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.node
}

// AddListener registers fn to be called with true when this participant becomes leader
// and with false when its leadership ends (also on Close with CloseNotifyLeader). Calls
// come in order, one at a time, on a goroutine the latch owns. It returns a function that
// unregisters fn. fn may call Close, which then returns without waiting for that
// goroutine (see Close).
func (l *Latch) AddListener(fn func(isLeader bool)) (remove func()) {
	if fn == nil {
		return func() {}
	}
	ln := &latchListener{fn: fn}
	l.listenMu.Lock()
	l.listeners = append(l.listeners, ln)
	l.listenMu.Unlock()
	return func() {
		ln.removed.Store(true)
		l.listenMu.Lock()
		defer l.listenMu.Unlock()
		if i := slices.Index(l.listeners, ln); i >= 0 {
			l.listeners = slices.Delete(l.listeners, i, i+1)
		}
	}
}

// queueEvent hands an event to the listener goroutine. l.mu is held.
func (l *Latch) queueEvent(isLeader bool) {
	l.listenMu.Lock()
	l.events = append(l.events, isLeader)
	l.listenMu.Unlock()
	select {
	case l.evSig <- struct{}{}:
	default:
	}
}

// dispatch calls the listeners with each event; after Close it delivers what is queued
// and ends.
func (l *Latch) dispatch() {
	defer close(l.dispDone)
	for {
		l.listenMu.Lock()
		if len(l.events) == 0 {
			l.listenMu.Unlock()
			select {
			case <-l.evSig:
				continue
			case <-l.dispStop:
			}
			l.listenMu.Lock()
			if len(l.events) == 0 {
				l.listenMu.Unlock()
				return
			}
		}
		ev := l.events[0]
		l.events = l.events[1:]
		ls := slices.Clone(l.listeners)
		l.listenMu.Unlock()
		for _, ln := range ls {
			if !ln.removed.Load() {
				l.call(ln, ev)
			}
		}
	}
}

func (l *Latch) call(ln *latchListener, isLeader bool) {
	defer framework.LogPanic(l.client.Logger(), "latch listener panicked", "component", "leader", "path", l.path, "id", l.id)
	ln.fn(isLeader)
}

// Close leaves the election: it stops the latch's goroutines, ends the current term (its
// Done closes before the node goes, so that the next leader never overlaps with this
// one), tells the listeners per the close mode, and deletes the latch node (guaranteed:
// a failed delete is retried in the background, and its error returned). The next
// participant in line becomes leader at once. A create of the latch node in flight (a
// Start, or the latch making its node again) is waited for, up to 10 s after Close was
// called, so that the node it made is deleted before Close returns; past that bound the
// create is given up, a node it made is deleted in the background once its answer comes,
// and Close says so in its error (so too when Start's own context ended its create just
// before the Close). Start then returns ErrClosed; it returns when its context ends, but
// Close still waits, as above, for the create and for the delete of the node it made.
// Close may be called more than once, also from a listener: from a listener it returns
// without waiting for the listener goroutine (that listener's own call is still
// running), which ends once the listener returns; from anywhere else every Close waits
// for the first one's work and for the listener goroutine to end.
func (l *Latch) Close() error {
	l.mu.Lock()
	prev := l.state
	if prev == stateClosed {
		// Closed already, or being closed: from outside, wait as the first Close does
		// (for its work and for the listener goroutine); from the listener, return.
		closeDone, dispDone := l.closeDone, l.dispDone
		l.mu.Unlock()
		if !l.disp.Inside() {
			<-closeDone
			if dispDone != nil {
				<-dispDone
			}
		}
		return nil
	}
	l.state = stateClosed
	close(l.closed)
	defer close(l.closeDone)
	cancel, runDone, starting := l.cancel, l.runDone, l.starting
	l.mu.Unlock()
	if prev == stateLatent {
		return nil // never started
	}
	if cancel == nil {
		// Start is creating the node: it sees the Close once its create resolves, and
		// deletes what it made. Wait for that (bounded: see createContext).
		<-starting
		l.mu.Lock()
		err := l.startErr
		l.mu.Unlock()
		return err
	}
	cancel()
	<-runDone
	l.unlisten()
	l.endTerm(l.opts.closeMode == CloseNotifyLeader)
	l.mu.Lock()
	node, nodeCzxid, nodeSid := l.node, l.nodeCzxid, l.nodeSid
	l.node = ""
	err := l.recreateErr
	l.mu.Unlock()
	if node != "" {
		if derr := l.deleteNode(context.Background(), node, nodeCzxid, nodeSid); derr != nil {
			err = errors.Join(err, fmt.Errorf("leader: close %s: %w", l.path, derr))
		}
	}
	close(l.dispStop)
	if !l.disp.Inside() {
		<-l.dispDone
	}
	return err
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
