package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// Event is a watch event. Its Path is the server's path (with the namespace).
type Event = zk.Event

// Stat is a node's metadata (czxid, mzxid, version, ephemeral owner, ...).
type Stat = zk.Stat

// ReadVersion returns st.Version, the version to send back in a write conditional on the
// node as read (a versioned setData, delete or check), or an error matching
// ErrWrappedVersion when it is -1: sent, that version would make the write
// unconditional.
func ReadVersion(st *Stat) (int32, error) {
	if st.Version == -1 {
		return 0, ErrWrappedVersion
	}
	return st.Version, nil
}

// DeleteOption configures one Delete.
type DeleteOption func(*deleteOpts)

type deleteOpts struct {
	version    int32
	maxCzxid   int64
	children   bool
	quietly    bool
	guaranteed bool
	background bool
	await      time.Duration // AwaitOutcome
	asRead     bool          // AsRead
	owner      int64         // OwnedBy
	ownerSet   bool          // OwnedBy was given (sid 0 is refused)
}

// OwnedBy deletes an ephemeral node of session sid only. The first attempt, when it goes
// out on session sid and reads nothing first, deletes as asked, at no cost; every other
// attempt — sent again after a lost answer, on another session than sid (the client gave
// sid up, which the server may still hold, or sid expired and a node at the path now is
// someone else's), in the background, or one that reads the node anyway (WithMaxCzxid) —
// reads the node's Stat first and deletes it, at the version read, only if sid owns it:
// a node sid does not own is ErrNoNode, one whose version read is -1 ErrWrappedVersion.
// No node is an ephemeral node of session 0 (0 is a persistent node's ephemeralOwner,
// and what Client.SessionID returns before the first session): OwnedBy(0) is refused
// with ErrInvalidArgument, nothing sent. The default is a node of any session.
func OwnedBy(sid int64) DeleteOption {
	return func(o *deleteOpts) { o.owner, o.ownerSet = sid, true }
}

// readsOwner reports whether attempt n of a delete bound to session owner (0: none)
// must read the node's owner first: any but a first attempt on that session.
func readsOwner(owner int64, conn zkConn, n int) bool {
	return owner != 0 && (n > 1 || conn.SessionID() != owner)
}

// WithVersion deletes only if the node's version matches. The default is any version.
func WithVersion(v int32) DeleteOption { return func(o *deleteOpts) { o.version = v } }

// WithMaxCzxid deletes the node only if the transaction that created it (its
// Stat.Czxid) is zxid or an earlier one, and answers ErrNoNode otherwise: a node deleted
// and created again at the same path is another node, which a version cannot tell apart
// (both start at version 0), but the later one has a later czxid. Given a node's own
// czxid, it deletes that node and no other. Each attempt reads the node's Stat, then
// deletes it at the version read (or at WithVersion's, when given): only a delete and
// re-create between the two, within one round trip, can slip through. A version read
// as -1 (wrapped: see ErrWrappedVersion) cannot bind the delete: it fails with
// ErrWrappedVersion and nothing is deleted. A guaranteed delete keeps the condition in
// the background. The default is any node at the path.
func WithMaxCzxid(zxid int64) DeleteOption { return func(o *deleteOpts) { o.maxCzxid = zxid } }

// WithChildren deletes the node's descendants first. The default is off.
func WithChildren() DeleteOption { return func(o *deleteOpts) { o.children = true } }

// Quietly makes deleting a missing node succeed. The default is to return ErrNoNode.
func Quietly() DeleteOption { return func(o *deleteOpts) { o.quietly = true } }

// Guaranteed hands a delete that failed for a connection-class reason (connection loss,
// an operation timeout, a moved session, or ctx ending while the request may have been in
// flight) to the client's background worker, which keeps deleting until the node is gone
// or the client closes (Curator's guaranteed delete). Any other error (NotEmpty, NoAuth,
// BadVersion, ...) is returned and nothing is queued. A versioned delete keeps its version
// in the background: BadVersion ends the job; one WithChildren deletes the node's
// descendants first there too. The caller still gets the error.
func Guaranteed() DeleteOption { return func(o *deleteOpts) { o.guaranteed = true } }

// InBackground sends nothing now: it hands the delete to the client's background worker
// (see Guaranteed), which sends it at once when connected and keeps trying until the node
// is gone or the client closes, and Delete returns nil at once. It is for a caller that
// must return now (its context ended) and whose node is provably its own; WithVersion
// and WithMaxCzxid still bound what the worker deletes, and WaitGuaranteedDeletes waits
// for it. It cannot go with WithChildren. The default is off.
func InBackground() DeleteOption { return func(o *deleteOpts) { o.background = true } }

// checkDelete checks a delete's path and options.
func (c *Client) checkDelete(path string, o *deleteOpts) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	switch {
	case path == "/" && c.prefix == "":
		return fmt.Errorf("%w: cannot delete the root", ErrInvalidArgument)
	case o.maxCzxid != 0 && o.children:
		return fmt.Errorf("%w: WithMaxCzxid and WithChildren together", ErrInvalidArgument)
	case o.background && o.children:
		return fmt.Errorf("%w: InBackground and WithChildren together", ErrInvalidArgument)
	case o.await > 0 && (o.children || o.background):
		return fmt.Errorf("%w: AwaitOutcome with WithChildren or InBackground", ErrInvalidArgument)
	case o.ownerSet && o.owner == 0:
		return fmt.Errorf("%w: OwnedBy(0): session 0 owns no node", ErrInvalidArgument)
	case o.asRead && o.version == -1:
		return ErrWrappedVersion // the caller read -1: nothing binds the delete
	}
	return nil
}

// Delete deletes the node at path.
func (c *Client) Delete(ctx context.Context, path string, opts ...DeleteOption) error {
	o := deleteOpts{version: -1}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := c.checkDelete(path, &o); err != nil {
		return opErr("delete", path, err)
	}
	full := c.fullPath(path)
	if o.background {
		if err := c.usable(); err != nil {
			return opErr("delete", path, err)
		}
		c.deleter.add(deleteJob{path: full, versioned: o.version != -1, version: o.version, maxCzxid: o.maxCzxid, owner: o.owner})
		return nil
	}
	var sent resent
	var a *awaiter
	if o.await > 0 {
		a = newAwaiter(c, ctx, o.await)
		defer a.stop()
		ctx = a.ctx
	}
	attempts := 0
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		attempts++
		if o.children {
			if err := c.deleteChildren(ctx, conn, full); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err // the node's own delete was not sent
			}
		}
		if (o.maxCzxid != 0 && !(o.asRead && attempts == 1)) || readsOwner(o.owner, conn, attempts) { // AsRead: the caller's read stands for the first
			return deleteCreated(c, ctx, conn, full, o.maxCzxid, o.owner, o.version, &sent, a)
		}
		_, err := callAt(c, ctx, "delete", full, awaitReq(a, func() (struct{}, error) { return struct{}{}, conn.Delete(full, o.version) }), nil)
		sent.note(err)
		return err
	})
	err = a.result(sent.unknownIf(err, zk.ErrNoNode, zk.ErrBadVersion))
	if errors.Is(err, zk.ErrNoNode) && o.quietly {
		return nil
	}
	if err != nil && o.guaranteed && connectionClass(err) && !errors.Is(err, ErrClosed) {
		c.deleter.add(deleteJob{path: full, children: o.children, versioned: o.version != -1, version: o.version, maxCzxid: o.maxCzxid, owner: o.owner})
	}
	return opErr("delete", path, err)
}

// testHookStatRead, when set (by tests only, before any client starts), sees each Stat
// that a delete bound to the node read has just read, before it decides the version.
var testHookStatRead func(*zk.Stat)

// deleteCreated deletes the node at full only if its czxid is maxCzxid or earlier (when
// maxCzxid is not 0) and session owner owns it (when owner is not 0): it reads the node's
// Stat and deletes at the version read, or at version when it is not -1. Another node at
// the path, or none, is ErrNoNode; a version read of -1, ErrWrappedVersion (not sent). A version that changed between the read and the
// delete (the same node, written meanwhile) is read again, unless version was given. a
// (nil: none) is AwaitOutcome's.
func deleteCreated(c *Client, ctx context.Context, conn zkConn, full string, maxCzxid, owner int64, version int32, sent *resent, a *awaiter) error {
	for {
		st, err := callAt(c, ctx, "exists", full, func() (*zk.Stat, error) {
			ok, st, err := conn.Exists(full)
			if err == nil && !ok {
				st = nil
			}
			return st, err
		}, nil)
		if err != nil {
			return err
		}
		if testHookStatRead != nil {
			testHookStatRead(st)
		}
		if st == nil || (maxCzxid != 0 && st.Czxid > maxCzxid) || (owner != 0 && st.EphemeralOwner != owner) {
			return zk.ErrNoNode
		}
		v := version
		if v == -1 {
			if v, err = ReadVersion(st); err != nil {
				return err
			}
		}
		_, err = callAt(c, ctx, "delete", full, awaitReq(a, func() (struct{}, error) { return struct{}{}, conn.Delete(full, v) }), nil)
		if sent != nil {
			sent.note(err) // only the delete itself: the read before it changes nothing
		}
		if errors.Is(err, zk.ErrBadVersion) && version == -1 {
			continue
		}
		return err
	}
}

func (c *Client) deleteChildren(ctx context.Context, conn zkConn, full string) error {
	kids, err := callAt(c, ctx, "getChildren", full, func() ([]string, error) { k, _, err := conn.Children(full); return k, err }, nil)
	if err != nil {
		return err
	}
	for _, k := range kids {
		child := JoinPath(full, k)
		if err := c.deleteChildren(ctx, conn, child); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		_, err := callAt(c, ctx, "delete", child, func() (struct{}, error) { return struct{}{}, conn.Delete(child, -1) }, nil)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// GetData returns the node's data and Stat.
func (c *Client) GetData(ctx context.Context, path string) ([]byte, *Stat, error) {
	data, st, _, err := c.getData(ctx, path, false)
	return data, st, err
}

// GetDataW is GetData that also watches the node's data: the Watch fires when the node
// changes or is deleted (or with EventNotWatching when the session ends or the client
// closes). No watch is set when the node does not exist (ErrNoNode). Callers asking for
// the same node's data watch before it fires share one Watch (see Watch).
func (c *Client) GetDataW(ctx context.Context, path string) ([]byte, *Stat, *Watch, error) {
	return c.getData(ctx, path, true)
}

func (c *Client) getData(ctx context.Context, path string, watch bool) ([]byte, *Stat, *Watch, error) {
	if err := ValidatePath(path); err != nil {
		return nil, nil, nil, opErr("getData", path, err)
	}
	full := c.fullPath(path)
	type res struct {
		data []byte
		st   *zk.Stat
	}
	var r res
	var w *Watch
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		read := func(watch bool) (res, watchSet, error) {
			if watch {
				d, st, ech, err := conn.GetW(full)
				return res{d, st}, ech, err
			}
			d, st, err := conn.Get(full)
			return res{d, st}, watchSet{}, err
		}
		var err error
		if watch {
			r, w, err = watchedRead(c, ctx, conn, "getData", full, watchData, read)
		} else {
			r, err = callAt(c, ctx, "getData", full, func() (res, error) { r, _, err := read(false); return r, err }, nil)
		}
		return err
	})
	if err != nil {
		return nil, nil, nil, opErr("getData", path, err)
	}
	return r.data, r.st, w, nil
}

// SetData sets the node's data if its version matches (-1: any) and returns its new Stat.
// When the request was sent again after a connection loss, an answer the first attempt
// may explain (NoNode: applied, then the node deleted; BadVersion: applied, then
// changed) also matches ErrUnknownOutcome.
func (c *Client) SetData(ctx context.Context, path string, data []byte, version int32) (*Stat, error) {
	if err := ValidatePath(path); err != nil {
		return nil, opErr("setData", path, err)
	}
	if err := c.checkSize(path, len(data)); err != nil {
		return nil, opErr("setData", path, err)
	}
	full := c.fullPath(path)
	var st *zk.Stat
	var sent resent
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		var err error
		st, err = callAt(c, ctx, "setData", full, func() (*zk.Stat, error) { return conn.Set(full, data, version) }, nil)
		sent.note(err)
		return err
	})
	// A resent setData answered NoNode (any version) or BadVersion (a versioned one) may
	// be explained by the first attempt: applied, then the node changed or deleted.
	if version != -1 {
		err = sent.unknownIf(err, zk.ErrNoNode, zk.ErrBadVersion)
	} else {
		err = sent.unknownIf(err, zk.ErrNoNode)
	}
	if err != nil {
		return nil, opErr("setData", path, err)
	}
	return st, nil
}

// Exists returns the node's Stat, or nil (and no error) when it does not exist.
func (c *Client) Exists(ctx context.Context, path string) (*Stat, error) {
	st, _, err := c.exists(ctx, path, false)
	return st, err
}

// ExistsW is Exists that also watches the node: the Watch fires when the node is created,
// changed or deleted (or with EventNotWatching when the session ends or the client
// closes). Callers asking for the same node's exists watch before it fires share one
// Watch (see Watch).
func (c *Client) ExistsW(ctx context.Context, path string) (*Stat, *Watch, error) {
	return c.exists(ctx, path, true)
}

func (c *Client) exists(ctx context.Context, path string, watch bool) (*Stat, *Watch, error) {
	if err := ValidatePath(path); err != nil {
		return nil, nil, opErr("exists", path, err)
	}
	full := c.fullPath(path)
	var st *zk.Stat
	var w *Watch
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		type res struct {
			ok bool
			st *zk.Stat
		}
		read := func(watch bool) (res, watchSet, error) {
			if watch {
				ok, st, ech, err := conn.ExistsW(full)
				return res{ok, st}, ech, err
			}
			ok, st, err := conn.Exists(full)
			return res{ok, st}, watchSet{}, err
		}
		var r res
		var err error
		if watch {
			r, w, err = watchedRead(c, ctx, conn, "exists", full, watchExists, read)
		} else {
			r, err = callAt(c, ctx, "exists", full, func() (res, error) { r, _, err := read(false); return r, err }, nil)
		}
		if err != nil {
			return err
		}
		st = nil
		if r.ok {
			st = r.st
		}
		return nil
	})
	if err != nil {
		return nil, nil, opErr("exists", path, err)
	}
	return st, w, nil
}

// Children returns the names of the node's children (in the server's order) and its
// Stat.
func (c *Client) Children(ctx context.Context, path string) ([]string, *Stat, error) {
	kids, st, _, err := c.children(ctx, path, false)
	return kids, st, err
}

// ChildrenW is Children that also watches the node's children: the Watch fires when a
// child is added or removed or the node is deleted (or with EventNotWatching when the
// session ends or the client closes). No watch is set when the node does not exist
// (ErrNoNode). Callers asking for the same node's child watch before it fires share one
// Watch (see Watch).
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, *Stat, *Watch, error) {
	return c.children(ctx, path, true)
}

func (c *Client) children(ctx context.Context, path string, watch bool) ([]string, *Stat, *Watch, error) {
	if err := ValidatePath(path); err != nil {
		return nil, nil, nil, opErr("getChildren", path, err)
	}
	full := c.fullPath(path)
	type res struct {
		kids []string
		st   *zk.Stat
	}
	var r res
	var w *Watch
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		read := func(watch bool) (res, watchSet, error) {
			if watch {
				k, st, ech, err := conn.ChildrenW(full)
				return res{k, st}, ech, err
			}
			k, st, err := conn.Children(full)
			return res{k, st}, watchSet{}, err
		}
		var err error
		if watch {
			r, w, err = watchedRead(c, ctx, conn, "getChildren", full, watchChildren, read)
		} else {
			r, err = callAt(c, ctx, "getChildren", full, func() (res, error) { r, _, err := read(false); return r, err }, nil)
		}
		return err
	})
	if err != nil {
		return nil, nil, nil, opErr("getChildren", path, err)
	}
	return r.kids, r.st, w, nil
}

// Sync makes the server the client is connected to catch up with the leader on path, so
// that a read after it sees every write committed before it.
func (c *Client) Sync(ctx context.Context, path string) error {
	if err := ValidatePath(path); err != nil {
		return opErr("sync", path, err)
	}
	full := c.fullPath(path)
	return opErr("sync", path, c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		_, err := callAt(c, ctx, "sync", full, func() (string, error) { return conn.Sync(full) }, nil)
		return err
	}))
}

// GetACL returns the node's ACL and Stat.
func (c *Client) GetACL(ctx context.Context, path string) ([]zk.ACL, *Stat, error) {
	if err := ValidatePath(path); err != nil {
		return nil, nil, opErr("getACL", path, err)
	}
	full := c.fullPath(path)
	var acl []zk.ACL
	var st *zk.Stat
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		type res struct {
			acl []zk.ACL
			st  *zk.Stat
		}
		r, err := callAt(c, ctx, "getACL", full, func() (res, error) { a, st, err := conn.GetACL(full); return res{a, st}, err }, nil)
		acl, st = r.acl, r.st
		return err
	})
	if err != nil {
		return nil, nil, opErr("getACL", path, err)
	}
	return acl, st, nil
}

// SetACL sets the node's ACL if its ACL version matches (-1: any). When the request was
// sent again after a connection loss, an answer the first attempt may explain (NoNode:
// applied, then the node deleted; BadVersion: applied, then its ACL version moved on)
// also matches ErrUnknownOutcome.
func (c *Client) SetACL(ctx context.Context, path string, acl []zk.ACL, aclVersion int32) (*Stat, error) {
	if err := ValidatePath(path); err != nil {
		return nil, opErr("setACL", path, err)
	}
	if len(acl) == 0 {
		return nil, opErr("setACL", path, fmt.Errorf("%w: empty ACL", ErrInvalidArgument))
	}
	full := c.fullPath(path)
	var st *zk.Stat
	var sent resent
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		var err error
		st, err = callAt(c, ctx, "setACL", full, func() (*zk.Stat, error) { return conn.SetACL(full, acl, aclVersion) }, nil)
		sent.note(err)
		return err
	})
	// As for SetData: a resent setACL answered NoNode (any version) or BadVersion (a
	// versioned one) may be explained by the first attempt.
	if aclVersion != -1 {
		err = sent.unknownIf(err, zk.ErrNoNode, zk.ErrBadVersion)
	} else {
		err = sent.unknownIf(err, zk.ErrNoNode)
	}
	if err != nil {
		return nil, opErr("setACL", path, err)
	}
	return st, nil
}
