package framework

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// CreateMode is the kind of node Create makes.
type CreateMode int

const (
	// Persistent nodes stay until deleted. The default.
	Persistent CreateMode = iota
	// PersistentSequential nodes get a 10-digit sequence suffix.
	PersistentSequential
	// Ephemeral nodes live as long as the session that created them.
	Ephemeral
	// EphemeralSequential nodes are ephemeral with a sequence suffix: what locks use.
	EphemeralSequential
	// Container nodes are deleted by the server some time after their last child goes.
	Container
	// PersistentWithTTL nodes are deleted by the server when they have had no child and no
	// change for the TTL (WithTTL). The server must run with extendedTypesEnabled.
	PersistentWithTTL
	// PersistentSequentialWithTTL is PersistentWithTTL with a sequence suffix.
	PersistentSequentialWithTTL
)

func (m CreateMode) sequential() bool {
	return m == PersistentSequential || m == EphemeralSequential || m == PersistentSequentialWithTTL
}

func (m CreateMode) ephemeral() bool { return m == Ephemeral || m == EphemeralSequential }

func (m CreateMode) ttl() bool { return m == PersistentWithTTL || m == PersistentSequentialWithTTL }

func (m CreateMode) flags() int32 {
	switch m {
	case PersistentSequential:
		return zk.FlagSequence
	case Ephemeral:
		return zk.FlagEphemeral
	case EphemeralSequential:
		return zk.FlagEphemeralSequential
	case Container:
		return zk.FlagContainer
	case PersistentWithTTL:
		return zk.FlagTTL
	case PersistentSequentialWithTTL:
		return zk.FlagPersistentSequentialWithTTL
	}
	return zk.FlagPersistent
}

// CreateOption configures one Create.
type CreateOption func(*createOpts)

type createOpts struct {
	mode       CreateMode
	acl        []zk.ACL
	parents    bool
	containers bool // parents as containers (WithContainerParents)
	protected  bool
	ttl        time.Duration
	orSetData  bool
	idempotent bool
	onSend     func()
	resent     *bool // WithResent
	inflight   *InFlight
	owner      OwnerToken
	mark       OwnerToken // a sequential create's own mark beside owner (see createMark)
	prefix     string     // WithProtectionPrefix
	prefixSet  bool
}

// WithMode sets the node's mode. The default is Persistent.
func WithMode(m CreateMode) CreateOption { return func(o *createOpts) { o.mode = m } }

// WithNodeACL sets the node's ACL. The default is the client's ACL provider's.
func WithNodeACL(acl []zk.ACL) CreateOption { return func(o *createOpts) { o.acl = acl } }

// WithParents creates missing parents as persistent nodes: Curator's
// creatingParentsIfNeeded. They stay when their last child goes. The default is off.
func WithParents() CreateOption {
	return func(o *createOpts) { o.parents, o.containers = true, false }
}

// WithContainerParents creates missing parents as container nodes, which the server
// deletes some time after their last child is gone (unless the client was configured
// WithContainers(false); then they are persistent): Curator's
// creatingParentContainersIfNeeded, what recipes use for their own parents. The chroot
// and namespace are always persistent. The default is off.
func WithContainerParents() CreateOption {
	return func(o *createOpts) { o.parents, o.containers = true, true }
}

// WithProtection names the node _c_<uuid>-<name>, so that after a connection loss the
// client finds the node its lost reply was about instead of creating a second one
// (Curator's protected mode). A node found that belongs to an older session is deleted
// and created again. If creation fails, any node with the prefix is deleted in the
// background. The default is off.
func WithProtection() CreateOption { return func(o *createOpts) { o.protected = true } }

// WithProtectionPrefix is WithProtection with the given prefix (one from
// NewProtectedPrefix, used for this one create) instead of a fresh one: for a caller that
// gives the create up and must then find the node it may have made by its name. A prefix
// not of that form is ErrInvalidArgument. The default is a fresh prefix.
func WithProtectionPrefix(prefix string) CreateOption {
	return func(o *createOpts) { o.protected, o.prefix, o.prefixSet = true, prefix, true }
}

// WithTTL sets the TTL of a PersistentWithTTL or PersistentSequentialWithTTL node.
func WithTTL(d time.Duration) CreateOption { return func(o *createOpts) { o.ttl = d } }

// WithOnSend calls fn each time the create request itself is handed to the connection
// (after any parents were made; again on a retry), just before it goes out. A request the
// caller sends after fn was called goes out after the create, on the same session, so
// ZooKeeper answers it after the create: recipes use this to pipeline a read behind a
// create. fn must be fast and must not block. The default is none.
func WithOnSend(fn func()) CreateOption { return func(o *createOpts) { o.onSend = fn } }

// WithResent sets *resent, once Create has tried the create, to whether an attempt of it
// may have been applied unanswered: its connection was lost, or its wait for the answer
// given up, while it was in flight (the client then sends it again, as the retry policy
// and the context allow). A plain create sent again that then succeeds made the node, and
// Create reports a success, as ZooKeeper and Curator do; but the first attempt may have
// made the node too, and someone deleted it in between: the create was then applied
// twice. A caller for which one create must be one change (a counter's first increment)
// takes such a success, with *resent true, for an outcome it cannot know. Without this
// option only a resend answered NodeExists says so (ErrUnknownOutcome). WithOnSend cannot
// tell it: it is called for each send, the second send of a create answered NoNode while
// its missing parents are made too. The creates of parents do not count. Create writes
// *resent on the caller's goroutine before it returns; WithResent(nil) does nothing. The
// default is none.
func WithResent(resent *bool) CreateOption { return func(o *createOpts) { o.resent = resent } }

// OrSetData sets the data of the node when it exists already, instead of failing.
func OrSetData() CreateOption { return func(o *createOpts) { o.orSetData = true } }

// Idempotent makes a create of a node that already exists with the same data succeed.
func Idempotent() CreateOption { return func(o *createOpts) { o.idempotent = true } }

// ProtectedPrefix is the start of every protected node's name.
const ProtectedPrefix = "_c_"

// NewProtectedPrefix returns a fresh "_c_<uuid>-" prefix.
func NewProtectedPrefix() string {
	var b [len(ProtectedPrefix) + 37]byte
	n := copy(b[:], ProtectedPrefix)
	putUUID(b[n : n+36])
	b[n+36] = '-'
	return string(b[:])
}

// IsProtectedName reports whether a node name has Curator's protected form
// _c_<36-char uuid>-<rest>.
func IsProtectedName(name string) bool {
	return len(name) > 40 && strings.HasPrefix(name, ProtectedPrefix) && name[39] == '-'
}

// StripProtectedPrefix returns a protected node name without its _c_<uuid>- prefix.
func StripProtectedPrefix(name string) string {
	if IsProtectedName(name) {
		return name[40:]
	}
	return name
}

// putUUID writes a random (version 4) UUID in its 36-character form into dst[:36],
// without allocating.
func putUUID(dst []byte) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	n := 0
	for i, part := range [...][2]int{{0, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 16}} {
		if i > 0 {
			dst[n] = '-'
			n++
		}
		n += hex.Encode(dst[n:], b[part[0]:part[1]])
	}
}

// Create creates a node at path and returns its path (with the sequence suffix and
// protected prefix, if any; without the namespace).
func (c *Client) Create(ctx context.Context, path string, data []byte, opts ...CreateOption) (string, error) {
	p, _, err := c.create(ctx, path, data, false, opts)
	return p, err
}

// CreateStat is Create that also returns the node's Stat (one more read): its Czxid is
// what recipes use as a fencing token. The read is bound to the node this call made when
// the name or the ACL proves it: a protected name (its UUID), or WithOwnerToken (the
// Stat is read with the node's ACL, which must carry the token). A node at the path that
// does not carry the token (ours was deleted and the name reused: a parent deleted and
// made again restarts its sequence numbers) is not this call's: CreateStat then returns
// the path created, no Stat and an error matching ErrNoNode (the node made is gone). An
// ACL that cannot be read (NoAuth) falls back to a read by name. Without protection or a
// token the Stat is read by name: it may be a later node's at that path.
func (c *Client) CreateStat(ctx context.Context, path string, data []byte, opts ...CreateOption) (string, *zk.Stat, error) {
	return c.create(ctx, path, data, true, opts)
}

func (c *Client) create(ctx context.Context, path string, data []byte, wantStat bool, opts []CreateOption) (string, *zk.Stat, error) {
	var o createOpts
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	acl, err := c.createACL(path, data, &o)
	if err != nil {
		return "", nil, opErr("create", path, err)
	}
	r := &createRun{c: c, o: o, data: data, acl: acl}
	r.name(c.fullPath(path), path)
	if o.protected && r.o.inflight == nil {
		// Counted so that the prefix sweep of a given-up create waits for its request.
		r.o.inflight = new(InFlight)
	}
	err = c.withRetry(ctx, r.attempt)
	if o.resent != nil {
		*o.resent = bool(r.sent)
	}
	if err != nil {
		if o.protected && r.attempts > 0 {
			c.deleter.add(deleteJob{parent: r.parent, prefix: r.prefix, owners: r.sessions, inflight: r.o.inflight})
		}
		if !o.protected {
			err = r.sent.unknownIf(err, zk.ErrNodeExists)
		}
		return "", nil, opErr("create", path, err)
	}
	if !wantStat {
		return c.relPath(r.created), nil, nil
	}
	st, err := c.createdStat(ctx, r.created, o.owner)
	if err != nil {
		return c.relPath(r.created), nil, opErr("create", path, err)
	}
	return c.relPath(r.created), st, nil
}

// createACL checks a create's arguments and options, and returns the ACL the node is
// made with: the options', or the client's ACL provider's, with the owner token's entry.
func (c *Client) createACL(path string, data []byte, o *createOpts) ([]zk.ACL, error) {
	validate := ValidatePath
	if o.mode.sequential() {
		validate = ValidatePathSequential
	}
	if err := validate(path); err != nil {
		return nil, err
	}
	switch {
	case path == "/":
		return nil, fmt.Errorf("%w: cannot create the root", ErrInvalidArgument)
	case o.mode < Persistent || o.mode > PersistentSequentialWithTTL:
		return nil, fmt.Errorf("%w: unknown create mode %d", ErrInvalidArgument, o.mode)
	case o.mode.ttl() != (o.ttl > 0):
		return nil, fmt.Errorf("%w: a TTL is needed with, and only with, a TTL mode", ErrInvalidArgument)
	}
	if o.prefixSet && !(len(o.prefix) == 40 && IsProtectedName(o.prefix+"x")) {
		return nil, fmt.Errorf("%w: protected prefix %q is not of the form _c_<uuid>-", ErrInvalidArgument, o.prefix)
	}
	if o.protected && !o.owner.IsZero() {
		return nil, fmt.Errorf("%w: an owner token with protection", ErrInvalidArgument)
	}
	acl := o.acl
	if len(acl) == 0 {
		acl = c.opts.aclProvider.ACLForPath(path)
	}
	if !o.owner.IsZero() {
		if len(acl) == 0 {
			// ZooKeeper refuses a create with no ACL (InvalidACL); the token's entry, which
			// grants no one anything, must not hide that and make a node no one can read.
			return nil, fmt.Errorf("%w: no ACL for the node (the owner token's entry grants nothing): %w", ErrInvalidArgument, zk.ErrInvalidACL)
		}
		acl = append(slices.Clip(acl), o.owner.ACL())
		if o.mode.sequential() {
			o.mark = newCreateMark()
			acl = append(acl, o.mark.ACL())
		}
	}
	if err := c.checkCreateSize(path, len(data), acl, o); err != nil {
		return nil, err
	}
	return acl, nil
}

// checkCreateSize refuses a create the server would drop the connection for: its exact
// encoded size (ACL and protected prefix included) and txnMargin must fit the packet
// limit.
func (c *Client) checkCreateSize(path string, dataLen int, acl []zk.ACL, o *createOpts) error {
	full := c.fullPath(path)
	extra := 0
	if o.protected {
		extra = len("_c_") + 36 + len("-") // the protected prefix added to the name
	}
	size := createSize(full, dataLen, acl, o.mode.ttl()) + extra
	if size+txnMargin > c.opts.maxPacket {
		return &DataTooLargeError{Path: path, Size: size, Limit: c.opts.maxPacket - txnMargin}
	}
	return nil
}

// createRun is one create across the attempts of its retries.
type createRun struct {
	c    *Client
	o    createOpts
	data []byte
	acl  []zk.ACL
	// full is the node's server path (with its protected prefix, if any), in parent, as
	// name (without the prefix); prefix is the protected prefix ("": none).
	full, parent, base, prefix string

	created  string  // the server path made, once known
	attempts int     // attempts made
	sent     resent  // an attempt may have been applied without its answer
	sessions []int64 // of the attempts of an ephemeral protected create: the sweep's owners
}

// name sets the node's server path from full (path: the caller's), with a new protected
// prefix unless one was given.
func (r *createRun) name(full, path string) {
	r.full, r.parent = full, ParentPath(full)
	r.base = full[strings.LastIndexByte(full, '/')+1:]
	if !r.o.protected {
		return
	}
	r.prefix = r.o.prefix
	if !r.o.prefixSet {
		r.prefix = NewProtectedPrefix()
	}
	r.full = JoinPath(r.parent, r.prefix+r.base)
	if strings.HasSuffix(path, "/") { // sequential create of "/a/": the name is just the prefix
		r.full = strings.TrimSuffix(r.parent, "/") + "/" + r.prefix
	}
}

// attempt is one attempt of the create, on conn.
func (r *createRun) attempt(ctx context.Context, conn zkConn) error {
	c, o := r.c, &r.o
	r.attempts++
	if o.protected && o.mode.ephemeral() && !slices.Contains(r.sessions, conn.SessionID()) {
		r.sessions = append(r.sessions, conn.SessionID())
	}
	if found, err := r.madeEarlier(ctx, conn); err != nil || found {
		return err
	}
	p, err := c.createOnce(ctx, conn, r.full, r.data, *o, r.acl)
	r.sent.note(err)
	if errors.Is(err, zk.ErrNoNode) && o.parents {
		if err = c.ensureParents(ctx, conn, r.parent, o.containers); err == nil {
			p, err = c.createOnce(ctx, conn, r.full, r.data, *o, r.acl)
			r.sent.note(err)
		}
	}
	if errors.Is(err, zk.ErrNodeExists) && !o.owner.IsZero() && bool(r.sent) && !o.mode.sequential() {
		var done bool
		if done, p, err = r.ownedExisting(ctx, conn); done {
			return err
		}
	}
	if errors.Is(err, zk.ErrNodeExists) && (o.orSetData || o.idempotent) && !o.mode.sequential() {
		err = r.existingAsAsked(ctx, conn)
		p = r.full
	}
	if err != nil {
		return err
	}
	r.created = p
	return nil
}

// madeEarlier looks, on an attempt after one whose answer may be lost, for the node an
// earlier attempt made: by its protected prefix, or by its owner token (sequential
// names). It reports whether it found it (then r.created is set).
func (r *createRun) madeEarlier(ctx context.Context, conn zkConn) (bool, error) {
	c, o := r.c, &r.o
	found := ""
	switch {
	case o.protected && r.attempts > 1:
		var err error
		if found, err = c.findProtected(ctx, conn, r.parent, r.prefix, o.mode); err != nil {
			return false, err
		}
	case !o.owner.IsZero() && o.mode.sequential() && bool(r.sent):
		// An attempt whose reply was lost may have made the node: find it by its token
		// (after a sync: a member we reconnected to may not have applied it yet).
		if _, err := callAt(c, ctx, "sync", r.parent, func() (string, error) { return conn.Sync(r.parent) }, nil); err != nil {
			return false, err
		}
		var err error
		if found, err = c.findOwnedCreated(ctx, conn, r.parent, r.base, *o); err != nil {
			return false, err
		}
	}
	if found != "" {
		r.created = found
		return true, nil
	}
	return false, nil
}

// ownedExisting decides about the node a create with an owner token found at its path
// (NodeExists) after an attempt whose reply was lost: ours (it carries our token) is
// taken (done, r.created set), ours of an older session is deleted and made again (p and
// err of that create), and another's is left (err NodeExists). done: the attempt ends
// with err.
func (r *createRun) ownedExisting(ctx context.Context, conn zkConn) (done bool, p string, err error) {
	c, o := r.c, &r.o
	st, mine, oerr := c.ownedOnce(ctx, conn, r.full, o.owner)
	if errors.Is(oerr, zk.ErrNoAuth) {
		st, mine, oerr = &zk.Stat{}, false, nil // its ACL cannot be read: not provably ours
	}
	if oerr != nil {
		return true, "", oerr
	}
	if st != nil && mine && o.mode.ephemeral() && st.EphemeralOwner != conn.SessionID() {
		// Ours, of an older session (it expired in between): delete it.
		if err := deleteCreated(c, ctx, conn, r.full, st.Czxid, 0, -1, nil, nil); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return true, "", err
		}
		st = nil
	}
	switch {
	case st == nil: // gone: create it once more
		p, err = c.createOnce(ctx, conn, r.full, r.data, *o, r.acl)
		r.sent.note(err)
		return false, p, err
	case mine:
		r.created = r.full
		return true, "", nil
	}
	return false, "", zk.ErrNodeExists
}

// existingAsAsked is what a create that found a node at its path does with
// WithOrSetData (it writes the data) or idempotently (the same data is success).
func (r *createRun) existingAsAsked(ctx context.Context, conn zkConn) error {
	c, full := r.c, r.full
	if r.o.orSetData {
		_, err := call(c, ctx, "setData", func() (*zk.Stat, error) { return conn.Set(full, r.data, -1) }, nil)
		return err
	}
	cur, err := call(c, ctx, "getData", func() ([]byte, error) { d, _, err := conn.Get(full); return d, err }, nil)
	if err == nil && !bytes.Equal(cur, r.data) {
		err = zk.ErrNodeExists
	}
	return err
}

// createdStat reads the Stat of the node a create made at created (server path): bound
// to the owner token when there is one (a node at the path that does not carry it is
// not ours: ErrNoNode), by name otherwise or when the node's ACL cannot be read.
func (c *Client) createdStat(ctx context.Context, created string, owner OwnerToken) (*zk.Stat, error) {
	var st *zk.Stat
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		var err error
		if !owner.IsZero() {
			var mine bool
			st, mine, err = c.ownedOnce(ctx, conn, created, owner)
			if !errors.Is(err, zk.ErrNoAuth) {
				if err == nil && (st == nil || !mine) {
					st, err = nil, zk.ErrNoNode // ours is gone; another's may have its name
				}
				return err
			}
		}
		st, err = c.statOnce(ctx, conn, created)
		return err
	})
	return st, err
}

// statOnce reads a node's Stat; ErrNoNode when it does not exist.
func (c *Client) statOnce(ctx context.Context, conn zkConn, full string) (*zk.Stat, error) {
	return callAt(c, ctx, "exists", full, func() (*zk.Stat, error) {
		ok, st, err := conn.Exists(full)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return st, err
	}, nil)
}

// createOnce sends one create. A node created by a request the caller gave up on is
// deleted when the reply arrives only when it is provably this call's own: a protected
// name (it carries our UUID) or a sequential node (the server gave its name to this
// request; the name can be reused once the node is gone, so that delete is bound to the
// node's czxid where a read behind the create allows: see lateUndo). A plain path's late
// create stays, as in ZooKeeper and Curator: a later call
// may have found that node (NodeExists) and relied on it.
func (c *Client) createOnce(ctx context.Context, conn zkConn, full string, data []byte, o createOpts, acl []zk.ACL) (string, error) {
	// The request is counted in o.inflight from before its goroutine starts until it is
	// answered: a Wait after the caller gave up cannot miss a request not sent yet.
	var fl *flight // nil without an InFlight: nothing counted, nothing allocated
	if o.inflight != nil {
		fl = &flight{f: o.inflight}
		o.inflight.add()
	}
	abandoned := func(p string, err error) {
		if err == nil && (o.protected || o.mode.sequential()) {
			c.deleter.add(deleteJob{path: p})
		}
	}
	var undo *lateUndo // an unprotected sequential node's name does not prove it ours
	if o.mode.sequential() && !o.protected {
		undo = newLateUndo(c, full)
		abandoned = undo.abandoned
	}
	p, err := callAt(c, ctx, "create", full, func() (string, error) {
		if fl != nil {
			fl.ran.Store(true)
			defer fl.finish()
		}
		if o.onSend != nil {
			o.onSend()
		}
		switch {
		case o.mode == Container:
			return conn.CreateContainer(full, data, zk.FlagContainer, acl)
		case o.mode.ttl():
			return conn.CreateTTL(full, data, o.mode.flags(), acl, o.ttl)
		default:
			return conn.Create(full, data, o.mode.flags(), acl)
		}
	}, abandoned)
	if undo != nil && err != nil && !errors.Is(err, ErrClosed) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		undo.gaveUp(conn) // the caller gave up while the create was in flight: bound its undo
	}
	if fl != nil && errors.Is(err, ErrClosed) && !fl.ran.Load() {
		fl.finish() // never sent (the client is closed), or to be failed by the closing connection
	}
	return p, err
}

// findProtected looks for our protected node under parent after a connection loss. A
// node of an ephemeral mode that another session owns is not ours: ours is of our
// session, or went with our expired one (a server that has not applied that expiry yet
// deletes it in time). It is neither returned nor touched: it may be another client's.
func (c *Client) findProtected(ctx context.Context, conn zkConn, parent, prefix string, mode CreateMode) (string, error) {
	kids, err := callAt(c, ctx, "getChildren", parent, func() ([]string, error) { k, _, err := conn.Children(parent); return k, err }, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, k := range kids {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		found := JoinPath(parent, k)
		if !mode.ephemeral() {
			return found, nil
		}
		st, err := c.statOnce(ctx, conn, found)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return "", err
		}
		if st.EphemeralOwner == conn.SessionID() {
			return found, nil
		}
		c.opts.logger.Info("a node under our protected name belongs to another session; not ours", "component", "framework", "op", "create", "path", found)
	}
	return "", nil
}

// ensureParents creates every missing node above and including full (a server path),
// deepest first: only missing levels cost a request. The chroot and namespace are created
// as persistent nodes, the rest as containers when asked (and the client allows it), else
// as persistent nodes.
func (c *Client) ensureParents(ctx context.Context, conn zkConn, full string, containers bool) error {
	if full == "/" || full == "" {
		return nil
	}
	container := containers && c.opts.containers && full != c.prefix && !strings.HasPrefix(c.prefix, full+"/")
	acl := c.opts.aclProvider.ACLForPath(c.relPath(full))
	create := func() error {
		_, err := call(c, ctx, "create", func() (string, error) {
			if container {
				return conn.CreateContainer(full, nil, zk.FlagContainer, acl)
			}
			return conn.Create(full, nil, zk.FlagPersistent, acl)
		}, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	}
	err := create()
	if errors.Is(err, zk.ErrNoNode) {
		if err = c.ensureParents(ctx, conn, ParentPath(full), containers); err == nil {
			err = create()
		}
	}
	return err
}

// EnsurePath creates path and its missing parents as persistent nodes, as Curator's
// ZKPaths.mkdirs. Existing nodes are fine.
func (c *Client) EnsurePath(ctx context.Context, path string) error {
	if err := ValidatePath(path); err != nil {
		return opErr("ensurePath", path, err)
	}
	return opErr("ensurePath", path, c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		return c.ensureParents(ctx, conn, c.fullPath(path), false)
	}))
}
