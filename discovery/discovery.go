package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework"
)

// cleanupTimeout bounds the delete of Unregister when the caller's context has no
// deadline of its own (and the delete after a failed Register), and all of Close's
// deletes together; what is not done by then goes on in the background.
const cleanupTimeout = 10 * time.Second

// retryPause is how long the keeper of a registration waits after a failed attempt
// before trying again, unless the client reconnects first.
const retryPause = time.Second

// Option configures a ServiceDiscovery.
type Option func(*options)

type options struct {
	onRegistered func(Registered)
	full         bool
}

// Registered is what a registration listener hears each time an instance's node is
// created: at Register, and each time it is created again because it was gone.
type Registered struct {
	Name, ID string
	Path     string // the node's path (for DynamicSequential, with its sequence number)
	Again    bool   // false for the creation of Register, true for a re-registration
}

// WithRegistrationListener sets a function called each time an instance's node is
// created (see Registered), on the goroutine that created it; it must not block. A
// listener that panics is logged (at Error, on the client's logger) and the registration
// goes on. The default is none.
func WithRegistrationListener(fn func(Registered)) Option {
	return func(o *options) { o.onRegistered = fn }
}

// WithEnabledField makes instances be written with the "enabled" field always, as Curator
// writes them with compatibleSerializationMode false. The default is Curator 5.4's
// default (compatible) form, which has it only when false. Java reads both.
func WithEnabledField() Option { return func(o *options) { o.full = true } }

// ServiceDiscovery registers service instances under a base path and reads the
// registry (Curator's ServiceDiscovery). Instance nodes are basePath/<name>/<id>,
// holding the instance's JSON as Curator writes it: Java services using Curator's
// discovery on the same base path see Go instances and the other way round.
//
// Registered instances are kept registered until Unregister or Close: when their node
// goes (a new session after the old one expired, or someone deleted it) it is created
// again, once the client is connected; when it is of a session the client has given up,
// it is replaced at once (see the package doc). A ServiceDiscovery is safe for concurrent
// use.
type ServiceDiscovery[T any] struct {
	c        *framework.Client
	basePath string
	o        options

	ctx    context.Context // ends at Close: bounds every keeper
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	regs   map[string]*registration[T]
	wake   chan struct{} // closed and replaced when the client (re)connects
	closed bool
	owned  []interface{ Close() error } // caches and providers made from this, closed by Close
	// cleaning has, by id, the removals not over yet of a registration's node: the
	// background cleanup of a failed Register, or the delete of an Unregister (done in the
	// background when its caller gives up). A Register of the same id waits for it: the
	// removal would find that Register's node and delete it.
	cleaning map[string]chan struct{}

	// removing counts the deletes of forgotten registrations' nodes going on in the
	// background (removeInBackground); removingIdle is closed when it drops to 0. Close
	// waits for them within its bound.
	removing     int
	removingIdle chan struct{}

	removeListener func()
}

// New returns a ServiceDiscovery for the registry under basePath. It checks its
// arguments and does not talk to ZooKeeper; its client must be started.
func New[T any](c *framework.Client, basePath string, opts ...Option) (*ServiceDiscovery[T], error) {
	if c == nil {
		return nil, fmt.Errorf("discovery: %w: nil client", framework.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(basePath); err != nil {
		return nil, fmt.Errorf("discovery: base path: %w", err)
	}
	if basePath == "/" {
		return nil, fmt.Errorf("discovery: base path must not be the root: %w", framework.ErrInvalidPath)
	}
	d := &ServiceDiscovery[T]{c: c, basePath: basePath, regs: map[string]*registration[T]{}, wake: make(chan struct{}),
		cleaning: map[string]chan struct{}{}}
	for _, opt := range opts {
		if opt != nil {
			opt(&d.o)
		}
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.removeListener = c.AddListener(func(s framework.State) {
		if s == framework.Connected || s == framework.Reconnected {
			d.mu.Lock()
			close(d.wake)
			d.wake = make(chan struct{})
			d.mu.Unlock()
		}
	})
	return d, nil
}

// BasePath returns the registry's base path.
func (d *ServiceDiscovery[T]) BasePath() string { return d.basePath }

// Client returns the client the registry is read and written with.
func (d *ServiceDiscovery[T]) Client() *framework.Client { return d.c }

func (d *ServiceDiscovery[T]) pathForName(name string) string {
	return framework.JoinPath(d.basePath, name)
}

func (d *ServiceDiscovery[T]) wakeChan() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wake
}

func (d *ServiceDiscovery[T]) marshal(inst *Instance[T]) ([]byte, error) {
	mode := compatibleMode
	if d.o.full {
		mode = fullMode
	}
	data, err := inst.marshal(mode)
	if err != nil {
		return nil, err
	}
	if err := d.c.CheckDataSize(framework.JoinPath(d.basePath, inst.Name, inst.ID), len(data)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidInstance, err)
	}
	return data, nil
}

// registration is one registered instance and the goroutine that keeps its node.
type registration[T any] struct {
	d    *ServiceDiscovery[T]
	lock chan struct{} // a mutex that a context can give up on: held for each write

	name, id string                 // the instance's, never changed
	shown    atomic.Pointer[[]byte] // the instance's data as last given, for Registered (no lock)
	creates  framework.InFlight     // the node's creates not answered yet (deleteNode waits)
	// token is in the ACL of every node this registration creates (and of none other):
	// what proves a node its own when its czxid is not known yet (a create whose reply
	// was lost or not read back), whoever else shares the session or the bytes.
	token framework.OwnerToken
	acl   []zk.ACL // the client's ACL for the node plus the token's entry (transactions)

	stopped atomic.Bool // set once Unregister, Close or a failed Register forgot it

	// guarded by lock
	inst    *Instance[T]
	data    []byte
	path    string // the node's path; "" for a DynamicSequential node not created yet
	created int    // creations so far
	// czxid identifies the node this registration made: 0 while not known (then the
	// token tells). Ownership is per registration, not per session: two registrations on
	// one client share the session, and a node this registration made
	// under an earlier session of ours is still its own.
	czxid int64
	// sent is set once a create (or a replacement) was sent: only then may a node of
	// this registration exist.
	sent bool
	// pending is set when Update gave the registration new data it did not write (the
	// node's czxid was not known yet): the keeper writes it once it has read the node.
	pending bool

	cancel context.CancelFunc
	done   chan struct{}
}

func (r *registration[T]) acquire(ctx context.Context) error {
	select {
	case r.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *registration[T]) release() { <-r.lock }

// Register registers inst: it creates its node (ephemeral for Dynamic, persistent for
// Static and Permanent, ephemeral-sequential for DynamicSequential, with container
// parents) and keeps it there until Unregister or Close. A node already at the path is
// replaced, as Curator does: it is deleted and ours created in one transaction (another
// registration's node, of another session or of this one: a second registry on the same
// client). The registration that lost the node then watches it and takes the path again
// only once it is free; its Update, Unregister and Close leave the node alone. On error
// nothing is registered and any node this call created is deleted (in the background
// when ctx ended or the connection failed).
func (d *ServiceDiscovery[T]) Register(ctx context.Context, inst *Instance[T]) error {
	if inst == nil {
		return fmt.Errorf("%w: nil instance", ErrInvalidInstance)
	}
	if err := inst.validate(); err != nil {
		return err
	}
	own := *inst
	data, err := d.marshal(&own)
	if err != nil {
		return err
	}
	r := &registration[T]{d: d, lock: make(chan struct{}, 1), inst: &own, data: data, done: make(chan struct{}),
		token: framework.NewOwnerToken()}
	nodePath := framework.JoinPath(d.basePath, own.Name, own.ID)
	r.acl = append(d.c.ACLForPath(nodePath), r.token.ACL())
	r.name, r.id = own.Name, own.ID
	r.shown.Store(&data)
	if own.ServiceType != DynamicSequential {
		r.path = nodePath
	}
	// The registration is stoppable (Unregister, Close) from the moment it is listed:
	// its cancel is set before, and its done is closed by the keeper or, when Register
	// fails or is stopped meanwhile, by Register once its writes are over.
	kctx, cancel := context.WithCancel(d.ctx)
	r.cancel = cancel
	d.mu.Lock()
	for ch := d.cleaning[own.ID]; ch != nil && !d.closed; ch = d.cleaning[own.ID] {
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			cancel()
			return fmt.Errorf("discovery: register %s: waiting for an earlier registration's node to be removed: %w", own.ID, ctx.Err())
		}
		d.mu.Lock()
	}
	if d.closed {
		d.mu.Unlock()
		cancel()
		return ErrClosed
	}
	if _, dup := d.regs[own.ID]; dup {
		d.mu.Unlock()
		cancel()
		return fmt.Errorf("%w: %s", ErrAlreadyRegistered, own.ID)
	}
	d.regs[own.ID] = r
	d.wg.Add(1) // this call: Close waits for it
	d.mu.Unlock()
	defer d.wg.Done()

	rctx, rcancel := context.WithCancel(ctx)
	stopAfter := context.AfterFunc(kctx, rcancel) // Unregister or Close meanwhile
	r.lock <- struct{}{}
	_, err = r.ensure(rctx)
	r.release()
	stopAfter()
	rcancel()
	if err == nil && kctx.Err() != nil {
		err = fmt.Errorf("discovery: register %s: unregistered meanwhile: %w", own.ID, ErrNotRegistered)
	}
	if err != nil {
		var cleaned chan struct{}
		d.mu.Lock()
		mine := d.regs[own.ID] == r // else Unregister or Close took it and deletes the node
		if mine {
			r.stopped.Store(true)
			delete(d.regs, own.ID)
			cleaned = make(chan struct{})
			d.cleaning[own.ID] = cleaned
		}
		d.mu.Unlock()
		close(r.done)
		cancel()
		// Only a node this call made goes (its token): a node that was there before
		// belongs to someone else. Once ctx ended the cleanup goes on in the background
		// (WaitGuaranteedDeletes waits for it): on a stalled connection it would hold the
		// caller for its whole bound.
		if mine {
			removed := func() { d.cleanedUp(own.ID, cleaned) }
			if ctx.Err() != nil {
				r.removeInBackground(nil, removed)
			} else {
				_ = r.remove(ctx, removed)
			}
		}
		return err
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(r.done)
		r.keep(kctx)
	}()
	return nil
}

// cleanedUp ends the background cleanup of a failed Register of id (see cleaning).
func (d *ServiceDiscovery[T]) cleanedUp(id string, ch chan struct{}) {
	d.mu.Lock()
	if d.cleaning[id] == ch {
		delete(d.cleaning, id)
	}
	d.mu.Unlock()
	close(ch)
}

// mine reports whether st, the node read at r.path, is this registration's: the node of
// its czxid or, while that is not known, a node carrying its token (then its czxid is
// learnt). A node whose ACL we may not read is not provably ours.
func (r *registration[T]) mine(ctx context.Context, st *framework.Stat) (bool, error) {
	if r.czxid != 0 {
		return st.Czxid == r.czxid, nil
	}
	if !r.sent {
		return false, nil
	}
	ost, owned, err := r.d.c.OwnedBy(ctx, r.path, r.token)
	if errors.Is(err, framework.ErrNoAuth) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if ost == nil || !owned || ost.Czxid != st.Czxid {
		return false, nil // gone or replaced since the read: the caller looks again
	}
	r.czxid = st.Czxid
	return true, nil
}

// ensureNext is what ensure does after a look at the node.
type ensureNext int

const (
	ensureCreate ensureNext = iota // the node is not there: create it
	ensureAgain                    // look again
	ensureDone                     // keep the watch returned
)

// lookAtNode reads the registration's node at r.path with a watch and decides: ours is
// kept (or replaced when of a session given up, or written when an Update is pending),
// another registration's is replaced at Register, or watched once ours was made (the last
// registration wins), and a missing one is made (again).
func (r *registration[T]) lookAtNode(ctx context.Context) (*framework.Watch, ensureNext, error) {
	c := r.d.c
	// A data watch, set only when the node exists (it fires when the node goes): an
	// exists watch on a missing node would stay on the server, should the create fail or
	// be given up, until the session ends.
	data, st, w, err := c.GetDataW(ctx, r.path)
	readable := true
	if errors.Is(err, framework.ErrNoAuth) {
		// Someone's node we may not read (its ACL denies READ): an exists watch needs no
		// permission, and on a node that is there it is a data watch on the server too.
		// (Deleting it needs only the parent's.)
		readable = false
		st, w, err = c.ExistsW(ctx, r.path)
		if err == nil && st == nil { // gone meanwhile: no watch to keep
			w = nil
		}
	}
	if errors.Is(err, framework.ErrNoNode) {
		st, w, err = nil, nil, nil
	}
	if err != nil {
		return nil, ensureAgain, err
	}
	if st == nil {
		if r.inst.ServiceType == DynamicSequential {
			r.path, r.czxid = "", 0 // gone: a new node, id + a new sequence number
			return nil, ensureAgain, nil
		}
		return nil, ensureCreate, nil
	}
	mine, err := r.mine(ctx, st)
	if err != nil {
		return nil, ensureAgain, err
	}
	if mine {
		return r.keepOurs(ctx, st, data, readable, w)
	}
	if r.created > 0 && r.inst.ServiceType != DynamicSequential {
		// Another registration of our id made it after ours (Curator's last registration
		// wins), on this client or another: watch their node, and take the path again
		// only once it is free, instead of taking it from them, and they from us, forever.
		return w, ensureDone, nil
	}
	// Another registration's node, at Register: an instance with our id elsewhere (or on
	// this client). Curator deletes it and creates its own; here both in one transaction,
	// so that the node we replaced is no longer anyone's but ours.
	if r.inst.ServiceType == DynamicSequential {
		r.path, r.czxid = "", 0
		return nil, ensureAgain, nil
	}
	return nil, ensureAgain, r.replace(ctx, st)
}

// keepOurs keeps the registration's own node (Stat st, data as read, w its watch).
func (r *registration[T]) keepOurs(ctx context.Context, st *framework.Stat, data []byte, readable bool, w *framework.Watch) (*framework.Watch, ensureNext, error) {
	c := r.d.c
	if r.inst.ServiceType.IsDynamic() && st.EphemeralOwner != c.SessionID() {
		// This registration's own node of a session the client has given up (a simulated
		// Lost; after a lost quorum or a paused leader the server holds that session for a
		// whole timeout more): replace it now, in one transaction, rather than let it
		// vanish from every provider when the server expires that session.
		if r.inst.ServiceType == DynamicSequential {
			err := c.Delete(ctx, r.path, framework.WithMaxCzxid(r.czxid), framework.Guaranteed())
			if err != nil && !errors.Is(err, framework.ErrNoNode) {
				return nil, ensureAgain, err
			}
			r.path, r.czxid = "", 0
			return nil, ensureAgain, nil
		}
		return nil, ensureAgain, r.replace(ctx, st)
	}
	if !r.pending || !readable || bytes.Equal(data, r.data) {
		r.pending = false
		return w, ensureDone, nil
	}
	// An Update that found the node not read back yet: its data goes in now. The write's
	// version is that of the node just proven ours.
	v, err := framework.ReadVersion(st)
	if err != nil {
		return nil, ensureAgain, err // wrapped: no version binds the write to this node
	}
	nst, err := c.SetData(ctx, r.path, r.data, v)
	if errors.Is(err, framework.ErrNoNode) || errors.Is(err, framework.ErrBadVersion) {
		return nil, ensureAgain, nil
	}
	if err != nil {
		return nil, ensureAgain, err
	}
	if nst.Czxid != r.czxid {
		c.Logger().Warn("discovery: the instance's node was replaced by another registration's between the read and the write, which got the data", "path", r.path)
	}
	r.pending = false
	return nil, ensureAgain, nil // the write fired our watch: look again
}

// ensure makes sure the node is there and this registration's (owned by this client's
// session where it is ephemeral), and returns a watch on it.
func (r *registration[T]) ensure(ctx context.Context) (*framework.Watch, error) {
	c := r.d.c
	mode := r.inst.ServiceType.createMode()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if attempt > 20 { // someone keeps taking the path from under us
			return nil, fmt.Errorf("discovery: register %s: the node keeps changing under us", r.inst.ID)
		}
		if r.inst.ServiceType == DynamicSequential && r.path == "" {
			if err := r.adopt(ctx); err != nil {
				return nil, err
			}
		}
		if r.path != "" {
			w, next, err := r.lookAtNode(ctx)
			switch {
			case err != nil:
				return nil, err
			case next == ensureDone:
				return w, nil
			case next == ensureAgain:
				continue
			}
		}
		target := r.path
		if target == "" {
			target = framework.JoinPath(r.d.basePath, r.inst.Name, r.inst.ID)
		}
		r.sent = true
		p, err := c.Create(ctx, target, r.data, framework.WithMode(mode), framework.WithContainerParents(),
			framework.WithOwnerToken(r.token), framework.WithInFlight(&r.creates))
		if err != nil {
			if errors.Is(err, framework.ErrNodeExists) {
				continue // look again: someone's
			}
			if r.inst.ServiceType == DynamicSequential && ctx.Err() == nil {
				continue // adopt finds the node if the create was applied
			}
			return nil, err
		}
		r.path, r.czxid = p, 0
		r.pending = false
		r.created++
		r.notify()
	}
}

// replaceGuard names the node a replacement creates and deletes in its transaction (see
// replace); readers never see it.
const replaceGuard = "zoocurator-replace-"

// replace deletes the node st at r.path and creates ours in one transaction, so that no
// reader ever finds the instance missing. The transaction is bound to the node st, not to
// its version (a node made at the path since has version 0 too): it first creates and
// deletes a sequential node under the parent, named with the sequence number the parent
// gives its next child as read before the node was read again. ZooKeeper numbers a
// parent's sequential children by the creates of children so far: (Cversion + NumChildren)
// / 2, as each create and each delete of a child adds one to Cversion. A child created
// since (a node made at the path) changes the number and the transaction fails as a
// whole; a node changed or gone meanwhile fails it too: the caller looks again.
func (r *registration[T]) replace(ctx context.Context, st *framework.Stat) error {
	c := r.d.c
	parent := framework.ParentPath(r.path)
	pst, err := c.Exists(ctx, parent)
	if err != nil || pst == nil {
		return err
	}
	cur, err := c.Exists(ctx, r.path)
	if err != nil || cur == nil || cur.Czxid != st.Czxid {
		return err
	}
	guard := framework.JoinPath(parent, replaceGuard)
	next := (int64(pst.Cversion) + int64(pst.NumChildren)) / 2
	r.sent = true
	_, err = c.Transaction(ctx,
		framework.CreateOp(guard, nil, framework.EphemeralSequential, nil),
		framework.DeleteOp(fmt.Sprintf("%s%010d", guard, int32(next)), -1),
		framework.DeleteOp(r.path, -1),
		framework.CreateOp(r.path, r.data, r.inst.ServiceType.createMode(), r.acl))
	var te *framework.TxnError
	if errors.As(err, &te) && te.Index == 1 {
		// The guard's number was not the one expected: a child was created since the
		// parent was read, or this server numbers children otherwise. Tell them apart.
		now, rerr := c.Exists(ctx, parent)
		if rerr == nil && now != nil && now.Cversion == pst.Cversion {
			// Nothing changed: the numbering is not the one above. Fall back to a delete
			// bound to the node's version (a node made at the path meanwhile with the
			// same version would go too).
			r.d.c.Logger().Warn("discovery: the server numbers sequential children otherwise; replacing by version", "path", r.path)
			var v int32
			if v, err = framework.ReadVersion(cur); err == nil {
				_, err = c.Transaction(ctx, framework.DeleteOp(r.path, v),
					framework.CreateOp(r.path, r.data, r.inst.ServiceType.createMode(), r.acl))
			}
		}
	}
	if err == nil {
		r.czxid = 0 // learnt from the node (its token) at the next look
		r.pending = false
		r.created++
		r.notify()
		return nil
	}
	if errors.Is(err, framework.ErrNoNode) || errors.Is(err, framework.ErrBadVersion) || errors.Is(err, framework.ErrNodeExists) {
		return nil
	}
	return err
}

// adopt looks, for a DynamicSequential instance not created yet, for a node this
// registration made (its token) whose create's reply was lost, and takes it; extra ones
// are deleted.
func (r *registration[T]) adopt(ctx context.Context) error {
	if !r.sent {
		return nil
	}
	c := r.d.c
	found, err := c.FindOwned(ctx, framework.JoinPath(r.d.basePath, r.inst.Name, r.inst.ID), r.token)
	if err != nil {
		return err
	}
	for _, p := range found {
		st, mine, err := c.OwnedBy(ctx, p, r.token)
		if err != nil {
			return err
		}
		if st == nil || !mine {
			continue
		}
		if r.path == "" && st.EphemeralOwner == c.SessionID() {
			r.path, r.czxid = p, st.Czxid
			r.pending = false
			r.created++
			r.notify()
			continue
		}
		_ = c.Delete(ctx, p, framework.WithMaxCzxid(st.Czxid), framework.Guaranteed())
	}
	return nil
}

// notify tells the registration listener; a listener that panics is logged and the
// registration goes on (its lock is held here: a panic let through would leave it held).
func (r *registration[T]) notify() {
	if fn := r.d.o.onRegistered; fn != nil {
		ev := Registered{Name: r.inst.Name, ID: r.inst.ID, Path: r.path, Again: r.created > 1}
		callListener(r.d.c.Logger(), "registration listener panicked", func() { fn(ev) }, "name", ev.Name, "id", ev.ID)
	}
}

// callListener calls a user's listener; a panic is logged at Error on log (msg, with
// attrs and the panic) and the caller goes on, as every listener of the library is called.
func callListener(log *slog.Logger, msg string, fn func(), attrs ...any) {
	defer func() {
		if p := recover(); p != nil {
			log.Error(msg, append(append([]any{"component", "discovery"}, attrs...), "panic", p)...)
		}
	}()
	fn()
}

// keep re-creates the node whenever it goes, until ctx ends.
func (r *registration[T]) keep(ctx context.Context) {
	d := r.d
	for {
		wake := d.wakeChan()
		if err := r.acquire(ctx); err != nil {
			return
		}
		w, err := r.ensure(ctx)
		path := r.path
		r.release()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.c.Logger().Warn("discovery: could not register the instance again; will retry", "name", r.name, "id", r.id, "err", err)
			t := time.NewTimer(retryPause)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-d.c.Done():
				t.Stop()
				return
			case <-wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		if !r.await(ctx, w, wake, path) {
			return
		}
	}
}

// recheckEvery is how often a registration looks at its node without a watch (one
// exists, which needs no permission on the node): ZooKeeper tells a watch nothing about
// a node its client may not read, so a node whose ACL someone changed to deny this
// client READ and then deleted fires no watch. A deletion made while the node was
// unreadable is noticed within recheckEvery.
const recheckEvery = 10 * time.Second

// await waits for the node's watch, a reconnection (wake) or, every recheckEvery, a look
// that finds the node at path gone unseen by the watch. It returns false when ctx ended
// or the client closed.
func (r *registration[T]) await(ctx context.Context, w *framework.Watch, wake <-chan struct{}, path string) bool {
	c := r.d.c
	tick := time.NewTicker(recheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-c.Done():
			return false
		case <-w.Done():
			return true
		case <-wake: // a reconnection: look again (a new session, say)
			return true
		case <-tick.C:
			if path == "" {
				continue
			}
			// No watch: one set at each look would pile watchers up on a node that
			// never changes. A failed look waits for the next (a connection event wakes).
			if st, err := c.Exists(ctx, path); err == nil && st == nil {
				return true
			}
		}
	}
}

// waitCreates waits, with no bound but the client's life, until the node's creates given
// up were answered or failed: a cleanup in the background must not give up on them after
// cleanupTimeout (a held reply, say) and then look too early; go-zookeeper fails them
// when the connection drops, and the client's Close ends the wait.
func (r *registration[T]) waitCreates() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-r.d.c.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	_ = r.creates.Wait(ctx)
	cancel()
	<-done
}

// deleteNode deletes the registration's node if it is there and this registration's: the
// node it made (its czxid) or, when that was not read back yet, the node carrying its
// token (for a DynamicSequential node whose name never came back, every such node named
// after the id). It holds the registration's lock meanwhile, so that an Update started
// before the registration was forgotten does not write at the same time.
func (r *registration[T]) deleteNode(ctx context.Context) error {
	if err := r.acquire(ctx); err != nil {
		return err
	}
	defer r.release()
	if !r.sent {
		return nil // no create was sent: no node of ours
	}
	c := r.d.c
	// A create given up (its caller's context ended) may still be applied: look only once
	// it was answered, so that the look cannot overtake it.
	if err := r.creates.Wait(ctx); err != nil {
		return err
	}
	if r.path == "" {
		found, err := c.FindOwned(ctx, framework.JoinPath(r.d.basePath, r.inst.Name, r.inst.ID), r.token)
		if err != nil {
			return err
		}
		var errs []error
		for _, p := range found {
			errs = append(errs, r.deleteOwned(ctx, p, 0))
		}
		return errors.Join(errs...)
	}
	return r.deleteOwned(ctx, r.path, r.czxid)
}

// deleteOwned deletes the node at p if it is the node of czxid or, czxid 0, if it
// carries r's token.
func (r *registration[T]) deleteOwned(ctx context.Context, p string, czxid int64) error {
	c := r.d.c
	if czxid == 0 {
		// The session may have moved to a member that has not applied our create yet:
		// bring it up to date before looking (reads are not linearizable across members).
		if err := c.Sync(ctx, p); err != nil && !errors.Is(err, framework.ErrNoNode) {
			return err
		}
		st, owned, err := c.OwnedBy(ctx, p, r.token)
		if errors.Is(err, framework.ErrNoAuth) {
			return nil // not provably ours: left alone
		}
		if err != nil {
			return err
		}
		if st == nil || !owned {
			return nil // gone, or another registration's node (of our id)
		}
		czxid = st.Czxid
	}
	// Bound by the node's czxid, a delete cannot remove a node registered at the same
	// path later (a version cannot tell them apart). No version: a write into this node
	// meanwhile (an Update) is still this node.
	return ignoreNoNode(c.Delete(ctx, p, framework.WithMaxCzxid(czxid)))
}

func ignoreNoNode(err error) error {
	if errors.Is(err, framework.ErrNoNode) {
		return nil
	}
	return err
}

// lasting reports whether a delete that failed with err may succeed when tried again: a
// connection-class failure, or its bound running out.
func lasting(err error) bool {
	return errors.Is(err, framework.ErrConnectionClosed) || errors.Is(err, framework.ErrSessionMoved) ||
		errors.Is(err, framework.ErrNoServer) || errors.Is(err, framework.ErrUnknownOutcome) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// remove deletes r's node with ctx (bounded by cleanupTimeout when it has no deadline of
// its own); when that fails for a reason that may pass (ctx ended, the connection), the
// delete goes on in the background (see removeInBackground). removed is called once the
// node is gone or will not be deleted.
func (r *registration[T]) remove(ctx context.Context, removed func()) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cleanupTimeout)
		defer cancel()
	}
	err := r.deleteNode(ctx)
	if err != nil && lasting(err) && !errors.Is(err, framework.ErrClosed) {
		r.removeInBackground(nil, removed)
		return err
	}
	if err != nil {
		r.d.c.Logger().Warn("discovery: could not delete the instance's node", "path", r.path, "err", err)
	}
	removed()
	return err
}

// removeInBackground deletes r's node on a goroutine of the client's (GoCleanup:
// WaitGuaranteedDeletes waits for it), once before is closed (nil: at once) and the
// node's creates were answered, trying again until it is done, it cannot be done, or the
// client closes: a guaranteed delete bound to this registration's node.
func (r *registration[T]) removeInBackground(before <-chan struct{}, removed func()) {
	c := r.d.c
	over := r.d.startRemoval()
	removed = func(f func()) func() { return func() { f(); over() } }(removed)
	if !c.GoCleanup(func() {
		defer removed()
		if before != nil {
			select {
			case <-before:
			case <-c.Done():
				return
			}
		}
		r.waitCreates()
		pause := 50 * time.Millisecond
		for {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			go func() {
				select {
				case <-c.Done():
					cancel()
				case <-ctx.Done():
				}
			}()
			err := r.deleteNode(ctx)
			cancel()
			if err == nil || errors.Is(err, framework.ErrClosed) || isDone(c.Done()) {
				return
			}
			if !lasting(err) {
				c.Logger().Warn("discovery: could not delete the instance's node", "path", r.path, "err", err)
				return
			}
			t := time.NewTimer(pause)
			select {
			case <-c.Done():
				t.Stop()
				return
			case <-t.C:
			}
			pause = min(2*pause, 2*time.Second)
		}
	}) {
		removed()
	}
}

// startRemoval counts one more background delete (see removing); the function it returns
// ends it.
func (d *ServiceDiscovery[T]) startRemoval() func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.removing == 0 {
		d.removingIdle = make(chan struct{})
	}
	d.removing++
	return sync.OnceFunc(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.removing--; d.removing == 0 {
			close(d.removingIdle)
		}
	})
}

// removalsOver returns a channel closed once no background delete is going on.
func (d *ServiceDiscovery[T]) removalsOver() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.removing == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return d.removingIdle
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (d *ServiceDiscovery[T]) take(id string) (*registration[T], error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	r, ok := d.regs[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotRegistered, id)
	}
	return r, nil
}

// Update writes inst's new data into the node of the instance registered with its id
// (Curator's updateService); later re-registrations use it too. The name and service type
// cannot change. The write is bound to this registration's own node (its czxid): when the
// node is gone, or another registration of the id holds the path (the last registration
// wins, as in Curator), nothing is written now and the new data goes into this
// registration's node when the keeper makes it again. It returns an error wrapping
// ErrConflict if the node was replaced between its read and its write (the data then went
// into the other node: ZooKeeper cannot take a write back), ErrNotRegistered once the
// registration is being unregistered, and an error matching framework.ErrWrappedVersion
// when the node's version reads -1 (it wrapped, after 2^32-1 writes): no write can then be
// bound to it.
func (d *ServiceDiscovery[T]) Update(ctx context.Context, inst *Instance[T]) error {
	if inst == nil {
		return fmt.Errorf("%w: nil instance", ErrInvalidInstance)
	}
	if err := inst.validate(); err != nil {
		return err
	}
	r, err := d.take(inst.ID)
	if err != nil {
		return err
	}
	own := *inst
	data, err := d.marshal(&own)
	if err != nil {
		return err
	}
	notRegistered := fmt.Errorf("%w: %s (being unregistered)", ErrNotRegistered, inst.ID)
	if r.stopped.Load() {
		return notRegistered
	}
	if err := r.acquire(ctx); err != nil {
		return err
	}
	defer r.release()
	if r.stopped.Load() {
		return notRegistered
	}
	if own.Name != r.inst.Name || own.ServiceType != r.inst.ServiceType {
		return fmt.Errorf("%w: the name and service type of a registered instance cannot change", ErrInvalidInstance)
	}
	r.inst, r.data = &own, data
	r.shown.Store(&data)
	if r.path == "" || r.czxid == 0 {
		r.pending = true
		return nil // being created: the keeper writes the new data once it has read the node
	}
	for attempt := 0; ; attempt++ {
		st, err := d.c.Exists(ctx, r.path)
		if err != nil {
			r.pending = true // the keeper writes it, should this call give up
			return err
		}
		if st == nil || st.Czxid != r.czxid {
			return nil // gone, or another registration's: the keeper makes ours with the new data
		}
		v, err := framework.ReadVersion(st)
		if err != nil {
			r.pending = true // the keeper meets the same node, and says so
			return fmt.Errorf("discovery: update %s: %w", inst.ID, err)
		}
		nst, err := d.c.SetData(ctx, r.path, data, v)
		if errors.Is(err, framework.ErrBadVersion) && attempt < 10 {
			continue // written by someone else meanwhile: look again
		}
		if errors.Is(err, framework.ErrNoNode) {
			return nil // gone: the keeper creates it again, with the new data
		}
		if err != nil {
			r.pending = true
			return err
		}
		r.pending = false
		if nst.Czxid != r.czxid {
			return fmt.Errorf("%w: update %s: its node was replaced by another registration's between the read and the write, which got the data", ErrConflict, inst.ID)
		}
		return nil
	}
}

// Unregister stops keeping the instance with inst's id and deletes its node (a
// guaranteed delete, bound to this registration's node: one that fails for a
// connection-class reason or that ctx ends goes on in the background, and Unregister
// returns by ctx). Another registration's node at its path (of another session, or of
// this one) is left alone.
func (d *ServiceDiscovery[T]) Unregister(ctx context.Context, inst *Instance[T]) error {
	if inst == nil {
		return fmt.Errorf("%w: nil instance", ErrInvalidInstance)
	}
	d.mu.Lock()
	r, ok := d.regs[inst.ID]
	var cleaned chan struct{}
	if ok {
		delete(d.regs, inst.ID)
		// No removal of this id is under way: Register waited for any before it listed r.
		cleaned = make(chan struct{})
		d.cleaning[inst.ID] = cleaned
	}
	closed := d.closed
	d.mu.Unlock()
	if !ok {
		if closed {
			return ErrClosed
		}
		return fmt.Errorf("%w: %s", ErrNotRegistered, inst.ID)
	}
	return r.stop(ctx, func() { d.cleanedUp(inst.ID, cleaned) })
}

// stop stops r's keeper and deletes r's node (see remove); once ctx ends, the delete goes
// on in the background. removed (when not nil) is called once the delete is over.
func (r *registration[T]) stop(ctx context.Context, removed func()) error {
	if removed == nil {
		removed = func() {}
	}
	r.stopped.Store(true)
	r.cancel()
	select {
	case <-r.done:
		return r.remove(ctx, removed)
	case <-ctx.Done():
	}
	// The caller gives up, but the registration is already forgotten: delete its node
	// once the keeper (or Register) is done with it, in the background.
	r.removeInBackground(r.done, removed)
	return ctx.Err()
}

// Registered returns copies of the instances registered through d, sorted by id, as last
// given to Register or Update (an update whose write is still under way included). It
// does not wait on ZooKeeper.
func (d *ServiceDiscovery[T]) Registered() []*Instance[T] {
	d.mu.Lock()
	regs := make([]*registration[T], 0, len(d.regs))
	for _, r := range d.regs {
		regs = append(regs, r)
	}
	d.mu.Unlock()
	out := make([]*Instance[T], 0, len(regs))
	for _, r := range regs {
		// Decoded from the bytes each time: a caller's copy shares nothing (a payload's
		// map) with the registration's or another caller's.
		if inst, err := Unmarshal[T](*r.shown.Load()); err == nil { // marshalled by us: no error
			out = append(out, inst)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// QueryForNames returns the names of the services under the base path, sorted (none
// when the base path does not exist).
func (d *ServiceDiscovery[T]) QueryForNames(ctx context.Context) ([]string, error) {
	kids, _, err := d.c.Children(ctx, d.basePath)
	if errors.Is(err, framework.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(kids)
	return kids, nil
}

// QueryForInstances reads every instance of the service name from ZooKeeper, sorted by
// node name. Nodes whose data is not an instance, and nodes this client may not read
// (their ACL denies it READ: framework.ErrNoAuth), are left out: the instances read are
// returned together with an error that joins one *InstanceError per such node (wrapping
// the decoding error or ErrNoAuth), as a ServiceCache reports CacheBadInstance for them.
func (d *ServiceDiscovery[T]) QueryForInstances(ctx context.Context, name string) ([]*Instance[T], error) {
	if err := validName("service name", name); err != nil {
		return nil, err
	}
	parent := d.pathForName(name)
	kids, _, err := d.c.Children(ctx, parent)
	if errors.Is(err, framework.ErrNoNode) {
		return []*Instance[T]{}, nil
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(kids)
	out := make([]*Instance[T], 0, len(kids))
	var bad []error
	for _, k := range kids {
		p := framework.JoinPath(parent, k)
		inst, err := d.read(ctx, p)
		switch {
		case errors.Is(err, framework.ErrNoNode):
		case errors.Is(err, ErrNotInstance):
			bad = append(bad, err)
		case errors.Is(err, framework.ErrNoAuth):
			bad = append(bad, &InstanceError{Path: p, Err: err})
		case err != nil:
			return nil, err
		default:
			out = append(out, inst)
		}
	}
	return out, errors.Join(bad...)
}

// QueryForInstance reads the instance id of the service name. It returns an error
// wrapping ErrNoInstance when there is no such node, an *InstanceError when the node's
// data is not an instance.
func (d *ServiceDiscovery[T]) QueryForInstance(ctx context.Context, name, id string) (*Instance[T], error) {
	if err := validName("service name", name); err != nil {
		return nil, err
	}
	if err := validName("instance id", id); err != nil {
		return nil, err
	}
	inst, err := d.read(ctx, framework.JoinPath(d.basePath, name, id))
	if errors.Is(err, framework.ErrNoNode) {
		return nil, fmt.Errorf("%w: %s/%s", ErrNoInstance, name, id)
	}
	return inst, err
}

func (d *ServiceDiscovery[T]) read(ctx context.Context, path string) (*Instance[T], error) {
	data, _, err := d.c.GetData(ctx, path)
	if err != nil {
		return nil, err
	}
	return decodeNode[T](path, data)
}

func decodeNode[T any](path string, data []byte) (*Instance[T], error) {
	inst, err := Unmarshal[T](data)
	if err != nil {
		return nil, &InstanceError{Path: path, Err: errors.Unwrap(err)}
	}
	return inst, nil
}

func (d *ServiceDiscovery[T]) own(x interface{ Close() error }) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.owned = append(d.owned, x)
	return nil
}

func (d *ServiceDiscovery[T]) disown(x interface{ Close() error }) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, y := range d.owned {
		if y == x {
			d.owned = append(d.owned[:i], d.owned[i+1:]...)
			return
		}
	}
}

// Close closes the caches and providers made from d, unregisters every instance still
// registered (deleting their nodes as Unregister does, all within one cleanupTimeout:
// the deletes not done by then go on in the background, see Client.WaitGuaranteedDeletes)
// and waits for d's goroutines. It may be called more than once; the errors of the
// deletes are returned joined.
func (d *ServiceDiscovery[T]) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	regs := d.regs
	d.regs = map[string]*registration[T]{}
	owned := d.owned
	d.owned = nil
	d.mu.Unlock()
	var errs []error
	for _, x := range owned {
		errs = append(errs, x.Close())
	}
	// One bound for all the deletes: what is not done by then goes on in the background.
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	for _, r := range regs {
		err := r.stop(ctx, nil)
		if err != nil && !errors.Is(err, framework.ErrClosed) {
			errs = append(errs, fmt.Errorf("discovery: unregister %s/%s: %w", r.inst.Name, r.inst.ID, err))
		}
	}
	d.cancel()
	d.wg.Wait()
	// The deletes that went to the background (an Unregister that gave up, say): waited
	// for within the same bound; past it they go on (WaitGuaranteedDeletes waits).
	select {
	case <-d.removalsOver():
	case <-ctx.Done():
	}
	d.removeListener()
	return errors.Join(errs...)
}
