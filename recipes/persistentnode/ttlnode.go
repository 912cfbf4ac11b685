package persistentnode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/retry"
)

// DefaultChildNodeName is the name of a TTLNode's touched child, as Curator's.
const DefaultChildNodeName = "touch"

// DefaultTouchScheduleFactor makes a TTLNode write its child every TTL/2, as Curator's.
const DefaultTouchScheduleFactor = 2

// TTLNode keeps a container node alive through a TTL child that it writes periodically:
// Curator's PersistentTtlNode. It is safe for concurrent use.
type TTLNode struct {
	node  *Node
	child string
	ttl   time.Duration
	every time.Duration

	mu      sync.Mutex
	started bool
	closed  bool
	stop    chan struct{}
	done    chan struct{}
	// touched is closed once a touch was answered: the child written, or refused
	// (refused then holds the server's answer, until a later touch writes the child).
	touched chan struct{}
	refused error
	// hadChild is the czxid the Node had for its container when a touch last wrote the
	// child (0: none yet, or not known): that container has had a child, which the
	// server's reaper needs. Close looks at the container unless it is that one.
	hadChild int64
	// hadChildSent is the Node's count of creates sent (Node.sent) when that touch began:
	// a create of the container sent since may have made a new one although its answer
	// was lost, the Node's czxid being still the old container's.
	hadChildSent uint64
	// closeDone is closed once the first Close has done its work (its delete of a
	// container of its own that never had a child): a later Close waits for it.
	closeDone chan struct{}
}

// NewTTL returns a TTLNode: a container node at path with data, and a child
// (DefaultChildNodeName) of mode PersistentWithTTL with the TTL given, written every
// ttl/factor. It checks its arguments but does not talk to ZooKeeper. The options that
// make sense are WithChildName, WithTouchScheduleFactor and WithoutParents.
func NewTTL(c *framework.Client, path string, ttl time.Duration, data []byte, opts ...Option) (*TTLNode, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.modeSet || o.protected || o.ttl != 0 {
		return nil, fmt.Errorf("persistentnode: %w: a TTL node is a container, not protected, with the TTL given to NewTTL", framework.ErrInvalidArgument)
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	if o.touchEvery < 1 {
		return nil, fmt.Errorf("persistentnode: %w: touch schedule factor %d", framework.ErrInvalidArgument, o.touchEvery)
	}
	if o.childName == "" || strings.ContainsRune(o.childName, '/') {
		return nil, fmt.Errorf("persistentnode: %w: child name %q", framework.ErrInvalidArgument, o.childName)
	}
	o.mode = framework.Container
	n, err := newNode(c, path, data, o, false)
	if err != nil {
		return nil, err
	}
	child := framework.JoinPath(path, o.childName)
	if err := framework.ValidatePath(child); err != nil {
		return nil, fmt.Errorf("persistentnode: %w", err)
	}
	every := ttl / time.Duration(o.touchEvery)
	if every <= 0 {
		every = time.Millisecond
	}
	return &TTLNode{node: n, child: child, ttl: ttl, every: every, closeDone: make(chan struct{})}, nil
}

// Start creates the container node in the background and starts touching its child:
// at once after the container was first created (Curator waits one period first), then
// every TTL/factor. Starting twice, or after Close, is an error.
func (t *TTLNode) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if t.started {
		return ErrAlreadyStarted
	}
	if err := t.node.Start(); err != nil {
		return err
	}
	t.started = true
	t.stop, t.done, t.touched = make(chan struct{}), make(chan struct{}), make(chan struct{})
	go t.run()
	return nil
}

// run touches the child until Close.
func (t *TTLNode) run() {
	defer close(t.done)
	ctx, release := untilStopped(t.stop, t.node.client.Done())
	defer release()
	select {
	case <-t.node.createdCh:
	case <-ctx.Done():
		return
	}
	tick := time.NewTicker(t.every)
	defer tick.Stop()
	for {
		if stopped(t.stop, t.node.client.Done()) {
			return // closed (perhaps from a listener, a moment before ctx ends)
		}
		t.touchOnce(ctx)
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// touchOnce touches the child and records the outcome for WaitForInitialCreate: written,
// or refused by the server (a TTL node refused by a server without extendedTypesEnabled,
// an ACL refusing the child). A connection-class failure is tried again at the next tick.
func (t *TTLNode) touchOnce(ctx context.Context) {
	t.node.mu.Lock()
	czxid, sent := t.node.czxid, t.node.sent // read before the touch: the child goes into that container, or it is gone
	t.node.mu.Unlock()
	written, err := t.touch(ctx)
	if written {
		t.mu.Lock()
		t.hadChild, t.hadChildSent = czxid, sent
		t.mu.Unlock()
	}
	if ctx.Err() != nil {
		return
	}
	if err != nil && (retry.IsRetryable(err, true) || errors.Is(err, framework.ErrNotConnected)) {
		t.node.client.Logger().Debug("TTL child not touched", "component", "persistentnode", "path", t.child, "err", err)
		return
	}
	if !written && err == nil {
		return // no container: the Node makes it again
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil && t.refused == nil { // told once, not at every tick
		t.node.client.Logger().Warn("TTL child refused", "component", "persistentnode", "path", t.child, "err", err)
	}
	t.refused = err
	select {
	case <-t.touched:
	default:
		close(t.touched)
	}
}

// touch writes the child, or creates it when it is missing, and reports whether it did.
// A missing container is left to the Node, which creates it again.
func (t *TTLNode) touch(ctx context.Context) (bool, error) {
	_, err := t.node.client.SetData(ctx, t.child, nil, -1)
	if errors.Is(err, framework.ErrNoNode) {
		_, err = t.node.client.Create(ctx, t.child, nil, framework.WithMode(framework.PersistentWithTTL),
			framework.WithTTL(t.ttl), framework.OrSetData())
		if errors.Is(err, framework.ErrNoNode) {
			return false, nil
		}
	}
	return err == nil, err
}

// WaitForInitialCreate waits until the container node was first created and its child
// first touched, the context ends, or the TTLNode is closed. When the server refused the
// child (a server without extendedTypesEnabled refuses every TTL node; an ACL on the
// container may refuse it), it returns the server's answer; it returns nil once a later
// touch wrote the child.
func (t *TTLNode) WaitForInitialCreate(ctx context.Context) error {
	if err := t.node.WaitForInitialCreate(ctx); err != nil {
		return err
	}
	t.mu.Lock()
	touched, done := t.touched, t.done
	t.mu.Unlock()
	select {
	case <-touched:
	case <-done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("persistentnode: %s not touched: %w", t.child, ctx.Err())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refused != nil {
		return fmt.Errorf("persistentnode: TTL child %s refused: %w", t.child, t.refused)
	}
	return nil
}

// ActualPath returns the container node's path; "" before it was first created.
func (t *TTLNode) ActualPath() string { return t.node.ActualPath() }

// ChildPath returns the path of the touched child.
func (t *TTLNode) ChildPath() string { return t.child }

// Data returns the data the container node is kept with.
func (t *TTLNode) Data() []byte { return t.node.Data() }

// SetData makes data the container node's data (see Node.SetData).
func (t *TTLNode) SetData(ctx context.Context, data []byte) error { return t.node.SetData(ctx, data) }

// AddListener registers fn to hear each creation of the container node (see
// Node.AddListener).
func (t *TTLNode) AddListener(fn func(Created)) (remove func()) { return t.node.AddListener(fn) }

// Close stops touching the child and keeping the container node. A container that has
// had a child is left to the server, as Curator's: it deletes the child once its TTL
// passes without a touch, then the container once it has no child. Close does not wait
// for a hung connection to answer a touch: a touch already handed to the connection when
// Close is called may still be applied after Close returned (once a stalled connection is
// back), and the child then lives one TTL past it; no touch is sent after Close returned.
//
// The server reaps only a container that has had a child (cversion above 0): one that
// never had any stays for good. Such a container comes about when Close comes before the
// first touch of a container the TTLNode made (the first, or a re-creation after someone
// deleted it; or the touch hangs), when the server refuses the child (a server without
// extendedTypesEnabled, an ACL refusing CREATE), or when a create of the container in
// flight when Close is called is applied after all (or a re-creation whose answer was
// lost, the Node still knowing the old container's czxid). So, unless a touch wrote the
// child into the container the TTLNode has and no create of the container was sent
// since that touch began, Close waits for the answer to any create of the
// container it gave up on, then looks at the container and deletes it when it carries
// this TTLNode's owner token and never had a child (cversion 0, none now), bound to its
// czxid; a child made meanwhile makes the delete fail (not empty), and the container is
// the server's again. Close waits for that at most 10 s; the rest, while the connection
// is lost or hangs, is a cleanup in the background that goes on until the container is
// looked at or the client is closed (the client's WaitGuaranteedDeletes and Close wait
// for it). A container of someone else's, or that had a child and lost it, is left to
// its owner or the server. The data watch of the Node on a container left to the server
// stays until the server reaps it; no watch is left on a container that is gone (see
// Node.Close). Close may be called many times.
func (t *TTLNode) Close() error {
	t.mu.Lock()
	if t.closed {
		started := t.started
		t.mu.Unlock()
		if started {
			waitFor(t.done) // the first Close may be under way
		}
		err := t.node.Close()
		waitUnlessInside(t.node.g, t.closeDone) // not from a listener the first Close waits for
		return err
	}
	t.closed = true
	started := t.started
	t.mu.Unlock()
	defer close(t.closeDone)
	if started {
		close(t.stop)
		waitFor(t.done)
	}
	if err := t.node.Close(); err != nil {
		return err
	}
	if !started || !t.mayBeChildless() {
		return nil
	}
	return t.reapChildless()
}

// mayBeChildless reports, once the Node's loop and the touches are over, whether the
// container may be one of this TTLNode's that never had a child: unless no create of it
// is in flight, none was sent since that touch began, and a touch wrote the child into
// the container the Node has (its czxid). The child went into that container, since it
// was there when the touch began; if it was gone by the touch, it is gone for good. A
// create sent since (a re-creation after someone deleted the container) may have made a
// new container although its answer was lost: the Node's czxid is then still the old
// one's.
func (t *TTLNode) mayBeChildless() bool {
	t.node.mu.Lock()
	czxid, sent := t.node.czxid, t.node.sent
	t.node.mu.Unlock()
	t.mu.Lock()
	hadChild, hadChildSent := t.hadChild, t.hadChildSent
	t.mu.Unlock()
	return t.node.creates.Pending() || czxid == 0 || czxid != hadChild || sent != hadChildSent
}

// reapChildless runs a cleanup of the client's (GoCleanup: Client.Close and
// WaitGuaranteedDeletes wait for it) that deletes the container when it is this
// TTLNode's own and never had a child (deleteChildless); Close waits for it at most
// cleanupTimeout.
func (t *TTLNode) reapChildless() error {
	c := t.node.client
	done := make(chan error, 1)
	if !c.GoCleanup(func() { done <- t.deleteChildless() }) {
		return nil // the client is closed: nothing can be sent
	}
	timer := time.NewTimer(cleanupTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		c.Logger().Debug("close leaves the look at its container to a cleanup in the background", "component", "persistentnode", "path", t.node.base)
		return nil
	}
}

// cleanupRetryPause is the pause of a cleanup after Close (deleteChildless, Node's
// deleteLater) between two looks that failed for a connection-class reason.
const cleanupRetryPause = time.Second

// deleteChildless waits, with no bound but the client's life, for the answer to the
// creates of the container given up on (go-zookeeper fails them when the connection
// drops): a create applied after the look would make a container that never gets a child.
// Then it looks at the container and deletes it when this TTLNode made it and it never had
// a child (deleteIfChildless), looking again after a failure of the connection's until it
// has looked or the client closed.
func (t *TTLNode) deleteChildless() error {
	n := t.node
	c := n.client
	ctx, release := untilStopped(nil, c.Done())
	defer release()
	if err := n.creates.Wait(ctx); err != nil {
		return nil // the client closed
	}
	for {
		looked, err := t.deleteIfChildless(ctx)
		switch {
		case ctx.Err() != nil, errors.Is(err, framework.ErrClosed):
			return nil
		case looked:
			return err
		case !retry.IsRetryable(err, true) && !errors.Is(err, framework.ErrNotConnected) && !errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("persistentnode: close %s: %w", n.base, err)
			c.Logger().Warn("container not looked at", "component", "persistentnode", "path", n.base, "err", err)
			return err
		}
		c.Logger().Debug("container not looked at; trying again", "component", "persistentnode", "path", n.base, "err", err)
		timer := time.NewTimer(cleanupRetryPause)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil
		}
	}
}

// deleteIfChildless looks at the container, within cleanupTimeout, and deletes it when it
// carries this TTLNode's owner token and never had a child (cversion 0, no children). The
// delete is bound to the czxid read (a node made at the path later stays); a child made
// after the look makes it fail, NotEmpty, and the container is then the server's to reap.
// It reports whether it looked: if not, err is the look's; if so, the delete's, one that
// failed for a connection-class reason being handed to the client's guaranteed-delete
// worker.
func (t *TTLNode) deleteIfChildless(ctx context.Context) (looked bool, err error) {
	n := t.node
	c := n.client
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	_ = c.Sync(ctx, n.base) // a create answered by a connection loss: bring the member up to date
	st, mine, err := c.OwnedBy(ctx, n.base, n.token)
	switch {
	case errors.Is(err, framework.ErrNoAuth):
		return true, nil // its ACL cannot be read: not provably this TTLNode's own (see Ownership)
	case err != nil:
		return false, err
	case st == nil || !mine || st.NumChildren > 0 || st.Cversion > 0:
		return true, nil
	}
	err = c.Delete(ctx, n.base, framework.WithMaxCzxid(st.Czxid), framework.Guaranteed(), framework.Quietly())
	if err != nil && !errors.Is(err, framework.ErrNotEmpty) { // a child came: the server reaps it
		err = fmt.Errorf("persistentnode: close %s: %w", n.base, err)
		c.Logger().Warn("container that never had a child not deleted", "component", "persistentnode", "path", n.base, "err", err)
		return true, err
	}
	return true, nil
}
