package framework

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// OwnerToken marks the nodes that one instance of a recipe creates, so that it can tell
// its own node from any other at the same path: another process's, or another instance's
// on the same client, whose ephemeral nodes have the same ephemeralOwner. Unlike a
// protected name (WithProtection), it changes neither the node's name nor its data: the
// token is one more entry of the node's ACL, READ for the digest identity
// "zoocurator-owner:<uuid>", which no one can authenticate as (a digest identity's second
// part is a 28-character SHA-1 in base64; a 36-character UUID never is one), so it
// grants nothing. Readers of the node's name and data (a Curator peer, a cache) do not
// see it; getACL shows it. The zero value is no token.
type OwnerToken struct{ id string }

// ownerTokenUser is the user part of an owner token's digest identity.
const ownerTokenUser = "zoocurator-owner"

// createMarkUser is the user part of the digest identity that marks the node of one
// sequential create WithOwnerToken.
const createMarkUser = "zoocurator-create"

// newCreateMark returns a fresh mark for one sequential create WithOwnerToken: one more
// ACL entry, granting nothing as the token's does, by which a resend of that create finds
// the node its own first attempt made, and not another create's with the same token.
func newCreateMark() OwnerToken {
	var b [36]byte
	putUUID(b[:])
	return OwnerToken{id: createMarkUser + ":" + string(b[:])}
}

// NewOwnerToken returns a fresh token, for one instance.
func NewOwnerToken() OwnerToken {
	var b [36]byte
	putUUID(b[:])
	return OwnerToken{id: ownerTokenUser + ":" + string(b[:])}
}

// IsZero reports whether t is the zero value (no token).
func (t OwnerToken) IsZero() bool { return t.id == "" }

// ACL returns the ACL entry that carries the token.
func (t OwnerToken) ACL() zk.ACL { return zk.ACL{Perms: zk.PermRead, Scheme: "digest", ID: t.id} }

// String returns the token's digest identity.
func (t OwnerToken) String() string { return t.id }

// in reports whether acl carries t.
func (t OwnerToken) in(acl []zk.ACL) bool {
	return !t.IsZero() && slices.ContainsFunc(acl, func(a zk.ACL) bool { return a.Scheme == "digest" && a.ID == t.id })
}

// WithOwnerToken adds t's entry (OwnerToken.ACL) to the node's ACL. A create that is
// sent again after a connection loss then finds the node its first attempt made, when it
// did, and returns it as created, instead of making a second node (a sequential mode: a
// child of the parent with the same name, a sequence number, t and the mark of that one
// create: a sequential create's node carries, beside t's entry, one more that grants
// nothing, READ for "zoocurator-create:<uuid>", fresh for each create) or failing with
// NodeExists (otherwise: the node at the path, when it carries t). A node of an ephemeral
// mode found that belongs to an older session (ours expired in between) is deleted and
// created again. Finding it needs READ or ADMIN on it: when a retry of a sequential
// create meets a child of that name whose ACL it cannot read, the outcome is unknown and
// the create fails with an error matching ErrUnknownOutcome (it is not sent again). With
// no ACL for the node (an ACL provider that gives none), the create fails with
// ErrInvalidArgument and ErrInvalidACL, as it would without the token. It cannot be used
// with WithProtection, whose name does this. The default is none.
func WithOwnerToken(t OwnerToken) CreateOption { return func(o *createOpts) { o.owner = t } }

// OwnedBy reads the node at path (its ACL): its Stat, nil when there is no node, and
// whether it carries t (the node was made by a Create WithOwnerToken(t)). Reading a
// node's ACL needs READ or ADMIN permission on it.
func (c *Client) OwnedBy(ctx context.Context, path string, t OwnerToken) (*Stat, bool, error) {
	if err := ValidatePath(path); err != nil {
		return nil, false, opErr("getACL", path, err)
	}
	full := c.fullPath(path)
	var st *zk.Stat
	var mine bool
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		var err error
		st, mine, err = c.ownedOnce(ctx, conn, full, t)
		return err
	})
	if err != nil {
		return nil, false, opErr("getACL", path, err)
	}
	return st, mine, nil
}

// ownedOnce reads the ACL of the node at full: its Stat (nil: no node) and whether it
// carries t.
func (c *Client) ownedOnce(ctx context.Context, conn zkConn, full string, t OwnerToken) (*zk.Stat, bool, error) {
	type res struct {
		acl []zk.ACL
		st  *zk.Stat
	}
	r, err := callAt(c, ctx, "getACL", full, func() (res, error) { a, st, err := conn.GetACL(full); return res{a, st}, err }, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return r.st, t.in(r.acl), nil
}

// FindOwned returns the sequential nodes that a Create of path (a sequential mode's
// path: the parent and the name before the sequence number) WithOwnerToken(t) made: the
// children of path's parent named path's name followed by a 10-digit sequence number and
// carrying t. It syncs first, so that creates applied before it are seen. No parent is
// no node.
func (c *Client) FindOwned(ctx context.Context, path string, t OwnerToken) ([]string, error) {
	if err := ValidatePathSequential(path); err != nil {
		return nil, opErr("findOwned", path, err)
	}
	full := c.fullPath(path)
	parent, name := ParentPath(full), full[strings.LastIndexByte(full, '/')+1:]
	var found []string
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		found = found[:0]
		if _, err := callAt(c, ctx, "sync", parent, func() (string, error) { return conn.Sync(parent) }, nil); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return c.eachOwned(ctx, conn, parent, name, t, nil, func(p string, _ *zk.Stat) (bool, error) {
			found = append(found, c.relPath(p))
			return true, nil
		})
	})
	if err != nil {
		return nil, opErr("findOwned", path, err)
	}
	return found, nil
}

// eachOwned calls fn with each child of parent named name followed by a sequence number
// that carries t, until fn returns false or an error.
// A child whose ACL cannot be read (NoAuth) is skipped, unless unreadable is not nil:
// then eachOwned returns unreadable (wrapping NoAuth).
func (c *Client) eachOwned(ctx context.Context, conn zkConn, parent, name string, t OwnerToken, unreadable func(error) error, fn func(full string, st *zk.Stat) (bool, error)) error {
	kids, err := callAt(c, ctx, "getChildren", parent, func() ([]string, error) { k, _, err := conn.Children(parent); return k, err }, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	slices.Sort(kids)
	for _, k := range kids {
		if !isSequentialOf(k, name) {
			continue
		}
		p := JoinPath(parent, k)
		st, mine, err := c.ownedOnce(ctx, conn, p, t)
		if errors.Is(err, zk.ErrNoAuth) {
			if unreadable != nil {
				return unreadable(err)
			}
			continue // its ACL cannot be read: not provably a node a Create WithOwnerToken(t) of ours made
		}
		if err != nil {
			return err
		}
		if st == nil || !mine {
			continue
		}
		more, err := fn(p, st)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// isSequentialOf reports whether child is name followed by a 10-digit sequence number
// (or a negative one, once the parent's counter wrapped: a '-' and 10 digits).
func isSequentialOf(child, name string) bool {
	seq, ok := strings.CutPrefix(child, name)
	if !ok {
		return false
	}
	seq = strings.TrimPrefix(seq, "-")
	if len(seq) != 10 {
		return false
	}
	for i := range len(seq) {
		if seq[i] < '0' || seq[i] > '9' {
			return false
		}
	}
	return true
}

// findOwnedCreated looks, on a retry of a sequential create WithOwnerToken, for the node
// an earlier attempt of this create made (it carries the create's mark): its path, or ""
// when there is none. A node of an ephemeral mode
// owned by another session (ours expired in between) is deleted and not returned. A
// child named like it whose ACL cannot be read (NoAuth: the ACL the create sent may give
// this client neither READ nor ADMIN) may be the earlier attempt's node: the outcome is
// unknown, and the create is not sent again (an error matching ErrUnknownOutcome).
func (c *Client) findOwnedCreated(ctx context.Context, conn zkConn, parent, name string, o createOpts) (string, error) {
	var created string
	unknown := func(err error) error { return &unknownOutcomeError{err: err} }
	// The create's own mark, not the token: another create of the instance carries it too.
	err := c.eachOwned(ctx, conn, parent, name, o.mark, unknown, func(p string, st *zk.Stat) (bool, error) {
		if !o.mode.ephemeral() || st.EphemeralOwner == conn.SessionID() {
			created = p
			return false, nil
		}
		c.opts.logger.Info("owned node belongs to an older session; deleting it", "component", "framework", "op", "create", "path", p)
		err := deleteCreated(c, ctx, conn, p, st.Czxid, 0, -1, nil, nil)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false, err
		}
		return true, nil
	})
	return created, err
}
