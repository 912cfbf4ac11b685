package wire

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
)

// The Client's requests are the Conn's (see requests.go), sent on the connection of the
// moment (see Client). A request with a watch registers it when the server's reply
// says it is set, on the reading goroutine, before the next event is read: an event
// that ends it is always told after the reply that set it, and a resumed session sets
// it again.

// codeNoNode is NoNode's code: an exists with a watch on a missing node sets an exist
// watch.
const codeNoNode int32 = -101

func (c *Client) root() chroot { return chroot(c.cfg.Chroot) }

// watchHook registers a one-shot watch of kind on path when the reply's code is 0 (or,
// with missing, NoNode: then the kind is missing).
func (c *Client) watchHook(path string, kind, missing WatchKinds) func(*reply) []Notice {
	return func(r *reply) []Notice {
		r.seq = c.order.Add(1)
		switch {
		case r.code == 0:
			c.reg.add(kind, path)
		case r.code == codeNoNode && missing != 0:
			c.reg.add(missing, path)
		}
		return nil
	}
}

// Create creates a node; see Conn.Create.
func (c *Client) Create(ctx context.Context, path string, data []byte, acl []zk.ACL, mode CreateMode, ttl time.Duration) (CreateReply, error) {
	var rsp create2Response
	zxid, err := c.do(ctx, mode.opcode(), c.root().createRequest(path, data, acl, mode, ttl), &rsp, nil)
	if err != nil {
		return CreateReply{}, err
	}
	return CreateReply{Path: c.root().strip(rsp.path), Stat: rsp.stat, Zxid: zxid}, nil
}

// Delete deletes a node at version (-1: any).
func (c *Client) Delete(ctx context.Context, path string, version int32) (Reply, error) {
	zxid, err := c.do(ctx, opDelete, &versionRequest{path: c.root().full(path), version: version}, nil, nil)
	return Reply{Zxid: zxid}, err
}

// Exists returns a node's Stat, or zk.ErrNoNode; with watch, it leaves a data watch on
// a node that exists, an exist watch on one that does not.
func (c *Client) Exists(ctx context.Context, path string, watch bool) (StatReply, error) {
	var rsp statResponse
	var hook func(*reply) []Notice
	if watch {
		hook = c.watchHook(path, WatchData, WatchExist)
	}
	zxid, seq, err := c.doSeq(ctx, opExists, &pathWatchRequest{path: c.root().full(path), watch: watch}, &rsp, hook)
	return StatReply{Stat: rsp.stat, Zxid: zxid, Seq: seq}, err
}

// GetData returns a node's data and Stat; with watch, it leaves a data watch.
func (c *Client) GetData(ctx context.Context, path string, watch bool) (DataReply, error) {
	var rsp getDataResponse
	var hook func(*reply) []Notice
	if watch {
		hook = c.watchHook(path, WatchData, 0)
	}
	zxid, seq, err := c.doSeq(ctx, opGetData, &pathWatchRequest{path: c.root().full(path), watch: watch}, &rsp, hook)
	return DataReply{Data: rsp.data, Stat: rsp.stat, Zxid: zxid, Seq: seq}, err
}

// SetData replaces a node's data at version (-1: any).
func (c *Client) SetData(ctx context.Context, path string, data []byte, version int32) (StatReply, error) {
	var rsp statResponse
	zxid, err := c.do(ctx, opSetData, &setDataRequest{path: c.root().full(path), data: data, version: version}, &rsp, nil)
	return StatReply{Stat: rsp.stat, Zxid: zxid}, err
}

// GetChildren returns a node's children and Stat; with watch, it leaves a child watch.
func (c *Client) GetChildren(ctx context.Context, path string, watch bool) (ChildrenReply, error) {
	var rsp getChildren2Response
	var hook func(*reply) []Notice
	if watch {
		hook = c.watchHook(path, WatchChild, 0)
	}
	zxid, seq, err := c.doSeq(ctx, opGetChildren2, &pathWatchRequest{path: c.root().full(path), watch: watch}, &rsp, hook)
	return ChildrenReply{Children: rsp.children, Stat: rsp.stat, Zxid: zxid, Seq: seq}, err
}

// GetACL returns a node's ACL and Stat.
func (c *Client) GetACL(ctx context.Context, path string) (ACLReply, error) {
	var rsp getACLResponse
	zxid, err := c.do(ctx, opGetACL, &pathRequest{path: c.root().full(path)}, &rsp, nil)
	return ACLReply{ACL: rsp.acl, Stat: rsp.stat, Zxid: zxid}, err
}

// SetACL replaces a node's ACL at ACL version (-1: any).
func (c *Client) SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (StatReply, error) {
	var rsp statResponse
	if acl == nil {
		acl = []zk.ACL{}
	}
	zxid, err := c.do(ctx, opSetACL, &setACLRequest{path: c.root().full(path), acl: acl, version: version}, &rsp, nil)
	return StatReply{Stat: rsp.stat, Zxid: zxid}, err
}

// Sync waits until the server of the connection has applied what the leader had
// committed when the sync reached it.
func (c *Client) Sync(ctx context.Context, path string) (Reply, error) {
	var rsp pathResponse
	zxid, err := c.do(ctx, opSync, &pathRequest{path: c.root().full(path)}, &rsp, nil)
	return Reply{Zxid: zxid}, err
}

// AddWatch sets a persistent watch (recursive or not) on path; the Client sets it again
// on a resumed session, until RemoveWatches or the session's end.
func (c *Client) AddWatch(ctx context.Context, path string, mode AddWatchMode) (Reply, error) {
	hook := func(r *reply) []Notice {
		if r.code == 0 {
			c.reg.addPersistent(mode, path)
		}
		return nil
	}
	zxid, err := c.do(ctx, opAddWatch, &modeRequest{path: c.root().full(path), mode: int32(mode)}, nil, hook)
	return Reply{Zxid: zxid}, err
}

// RemoveWatches removes the session's watches of typ on path. Once the server
// confirmed it, the Client forgets them and tells OnEvent, before the request returns,
// with the events the Java client makes (the server sends none): EventDataWatchRemoved
// for data and exist watches, EventChildWatchRemoved for a child watch,
// EventPersistentWatchRemoved for a persistent one. With none to remove, it fails with
// an *Error of CodeNoWatcher.
func (c *Client) RemoveWatches(ctx context.Context, path string, typ WatcherType) (Reply, error) {
	hook := func(r *reply) []Notice {
		if r.code != 0 {
			return nil
		}
		return c.reg.removed(path, typ, c.Session().ID)
	}
	zxid, err := c.do(ctx, opRemoveWatches, &modeRequest{path: c.root().full(path), mode: int32(typ)}, nil, hook)
	return Reply{Zxid: zxid}, err
}

// GetEphemerals lists the paths of the session's ephemeral nodes that start with
// prefix; see Conn.GetEphemerals.
func (c *Client) GetEphemerals(ctx context.Context, prefix string) (EphemeralsReply, error) {
	var rsp stringsResponse
	full := c.root().full(prefix)
	if prefix == "/" && c.cfg.Chroot != "" {
		full = c.cfg.Chroot + "/"
	}
	zxid, err := c.do(ctx, opGetEphemerals, &pathRequest{path: full}, &rsp, nil)
	for i, p := range rsp.list {
		rsp.list[i] = c.root().strip(p)
	}
	return EphemeralsReply{Paths: rsp.list, Zxid: zxid}, err
}

// Multi applies the operations atomically; see Conn.Multi.
func (c *Client) Multi(ctx context.Context, ops ...WriteOp) (MultiReply, error) {
	r, err := c.roundTrip(ctx, opMulti, &multiRequest{c: c.root(), write: ops}, nil)
	if err != nil {
		return MultiReply{}, err
	}
	return multiOutcome(decodeMulti(r, c.root()))
}

// MultiRead reads in one request; see Conn.MultiRead.
func (c *Client) MultiRead(ctx context.Context, ops ...ReadOp) (MultiReply, error) {
	r, err := c.roundTrip(ctx, opMultiRead, &multiRequest{c: c.root(), read: ops}, nil)
	if err != nil {
		return MultiReply{}, err
	}
	return decodeMulti(r, c.root())
}

// WhoAmI returns the identities the server holds for the connection of the moment; see
// Conn.WhoAmI.
func (c *Client) WhoAmI(ctx context.Context) (WhoAmIReply, error) {
	var rsp whoAmIResponse
	zxid, err := c.do(ctx, opWhoAmI, nil, &rsp, nil)
	return WhoAmIReply{Clients: rsp.info, Zxid: zxid}, err
}
