package wire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// Each request method sends one request and waits for its reply or for ctx to end. A
// server error comes back as an *Error (errors.Is(err, zk.ErrNoNode), ...) that carries
// the reply's zxid; a request whose reply did not come fails with ctx.Err(), ErrClosed or
// an error wrapping ErrConnectionLost, and may have been applied. Paths are the client's
// (Config.Chroot is added and removed here); the wire package does not check them, the
// server does (zk.ErrBadArguments).

// Reply is the reply to a request whose reply has no body.
type Reply struct {
	// Zxid is the zxid in the reply's header.
	Zxid int64
}

// StatReply is the reply to exists, setData and setACL.
type StatReply struct {
	Stat *zk.Stat
	Zxid int64
	// Seq, for a read with a watch sent by a Client, is the reply's place among the
	// Client's watch events (see Notice.Seq).
	Seq uint64
}

// CreateReply is the reply to a create: the node's path (with its sequence number for a
// sequential node) and its Stat.
type CreateReply struct {
	Path string
	Stat *zk.Stat
	Zxid int64
}

// DataReply is the reply to getData.
type DataReply struct {
	Data []byte
	Stat *zk.Stat
	Zxid int64
	// Seq, for a read with a watch sent by a Client, is the reply's place among the
	// Client's watch events (see Notice.Seq).
	Seq uint64
}

// ChildrenReply is the reply to getChildren: the children's names, unsorted, and the
// parent's Stat.
type ChildrenReply struct {
	Children []string
	Stat     *zk.Stat
	Zxid     int64
	// Seq, for a read with a watch sent by a Client, is the reply's place among the
	// Client's watch events (see Notice.Seq).
	Seq uint64
}

// ACLReply is the reply to getACL.
type ACLReply struct {
	ACL  []zk.ACL
	Stat *zk.Stat
	Zxid int64
}

// EphemeralsReply is the reply to getEphemerals: the paths of the session's ephemeral
// nodes.
type EphemeralsReply struct {
	Paths []string
	Zxid  int64
}

// CountReply is the reply to getAllChildrenNumber.
type CountReply struct {
	Count int32
	Zxid  int64
}

// WhoAmIReply is the reply to whoAmI.
type WhoAmIReply struct {
	Clients []ClientInfo
	Zxid    int64
}

// Create creates a node (create2, createContainer or createTTL by mode) and returns its
// path and Stat. ttl is for the TTL modes only, which need it above zero.
func (c *Conn) Create(ctx context.Context, path string, data []byte, acl []zk.ACL, mode CreateMode, ttl time.Duration) (CreateReply, error) {
	var rsp create2Response
	zxid, err := c.do(ctx, mode.opcode(), c.createRequest(path, data, acl, mode, ttl), &rsp)
	if err != nil {
		return CreateReply{}, err
	}
	return CreateReply{Path: c.strip(rsp.path), Stat: rsp.stat, Zxid: zxid}, nil
}

func (c *Conn) createRequest(path string, data []byte, acl []zk.ACL, mode CreateMode, ttl time.Duration) *createRequest {
	return chroot(c.cfg.Chroot).createRequest(path, data, acl, mode, ttl)
}

func (c chroot) createRequest(path string, data []byte, acl []zk.ACL, mode CreateMode, ttl time.Duration) *createRequest {
	if acl == nil {
		acl = []zk.ACL{}
	}
	return &createRequest{path: c.full(path), data: data, acl: acl, flags: int32(mode), withTTL: mode.isTTL(), ttl: ttl.Milliseconds()}
}

// Delete deletes a node at version (-1: any).
func (c *Conn) Delete(ctx context.Context, path string, version int32) (Reply, error) {
	zxid, err := c.do(ctx, opDelete, &versionRequest{path: c.full(path), version: version}, nil)
	return Reply{Zxid: zxid}, err
}

// Exists returns a node's Stat, or zk.ErrNoNode; with watch, it leaves a watch that the
// node's creation, deletion or change fires, whether it exists or not.
func (c *Conn) Exists(ctx context.Context, path string, watch bool) (StatReply, error) {
	var rsp statResponse
	zxid, err := c.do(ctx, opExists, &pathWatchRequest{path: c.full(path), watch: watch}, &rsp)
	return StatReply{Stat: rsp.stat, Zxid: zxid}, err
}

// GetData returns a node's data and Stat; with watch, it leaves a data watch.
func (c *Conn) GetData(ctx context.Context, path string, watch bool) (DataReply, error) {
	var rsp getDataResponse
	zxid, err := c.do(ctx, opGetData, &pathWatchRequest{path: c.full(path), watch: watch}, &rsp)
	return DataReply{Data: rsp.data, Stat: rsp.stat, Zxid: zxid}, err
}

// SetData replaces a node's data at version (-1: any).
func (c *Conn) SetData(ctx context.Context, path string, data []byte, version int32) (StatReply, error) {
	var rsp statResponse
	zxid, err := c.do(ctx, opSetData, &setDataRequest{path: c.full(path), data: data, version: version}, &rsp)
	return StatReply{Stat: rsp.stat, Zxid: zxid}, err
}

// GetChildren returns a node's children and Stat (getChildren2); with watch, it leaves a
// child watch.
func (c *Conn) GetChildren(ctx context.Context, path string, watch bool) (ChildrenReply, error) {
	var rsp getChildren2Response
	zxid, err := c.do(ctx, opGetChildren2, &pathWatchRequest{path: c.full(path), watch: watch}, &rsp)
	return ChildrenReply{Children: rsp.children, Stat: rsp.stat, Zxid: zxid}, err
}

// GetACL returns a node's ACL and Stat.
func (c *Conn) GetACL(ctx context.Context, path string) (ACLReply, error) {
	var rsp getACLResponse
	zxid, err := c.do(ctx, opGetACL, &pathRequest{path: c.full(path)}, &rsp)
	return ACLReply{ACL: rsp.acl, Stat: rsp.stat, Zxid: zxid}, err
}

// SetACL replaces a node's ACL at ACL version (-1: any).
func (c *Conn) SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (StatReply, error) {
	var rsp statResponse
	if acl == nil {
		acl = []zk.ACL{}
	}
	zxid, err := c.do(ctx, opSetACL, &setACLRequest{path: c.full(path), acl: acl, version: version}, &rsp)
	return StatReply{Stat: rsp.stat, Zxid: zxid}, err
}

// Sync waits until the server the Conn is connected to has applied every transaction
// the leader had committed when the sync reached it.
func (c *Conn) Sync(ctx context.Context, path string) (Reply, error) {
	var rsp pathResponse
	zxid, err := c.do(ctx, opSync, &pathRequest{path: c.full(path)}, &rsp)
	return Reply{Zxid: zxid}, err
}

// AddWatch sets a persistent watch, recursive or not, on a path whether its node exists
// or not (ZooKeeper 3.6 and later). It stays set until RemoveWatches or the session's
// end, and the server does not set it again on a resumed session: Config.Watches does.
func (c *Conn) AddWatch(ctx context.Context, path string, mode AddWatchMode) (Reply, error) {
	zxid, err := c.do(ctx, opAddWatch, &modeRequest{path: c.full(path), mode: int32(mode)}, nil)
	return Reply{Zxid: zxid}, err
}

// RemoveWatches removes the session's watches of a type on a path. With none to remove,
// it fails with an *Error of CodeNoWatcher. The server sends no event for the removal:
// the Java client makes one itself (EventDataWatchRemoved, ...) for its watchers.
func (c *Conn) RemoveWatches(ctx context.Context, path string, typ WatcherType) (Reply, error) {
	zxid, err := c.do(ctx, opRemoveWatches, &modeRequest{path: c.full(path), mode: int32(typ)}, nil)
	return Reply{Zxid: zxid}, err
}

// CheckWatches reports whether the session has watches of a type on a path: nil if it
// has, an *Error of CodeNoWatcher if not.
func (c *Conn) CheckWatches(ctx context.Context, path string, typ WatcherType) (Reply, error) {
	zxid, err := c.do(ctx, opCheckWatches, &modeRequest{path: c.full(path), mode: int32(typ)}, nil)
	return Reply{Zxid: zxid}, err
}

// GetEphemerals lists the paths of the session's ephemeral nodes that start with prefix
// ("/" for all), without the chroot. The prefix is a string's: "/a" matches "/ab".
func (c *Conn) GetEphemerals(ctx context.Context, prefix string) (EphemeralsReply, error) {
	var rsp stringsResponse
	full := c.full(prefix)
	if prefix == "/" && c.cfg.Chroot != "" {
		full = c.cfg.Chroot + "/" // only below the chroot, not "/chroot2"
	}
	zxid, err := c.do(ctx, opGetEphemerals, &pathRequest{path: full}, &rsp)
	for i, p := range rsp.list {
		rsp.list[i] = c.strip(p)
	}
	return EphemeralsReply{Paths: rsp.list, Zxid: zxid}, err
}

// GetAllChildrenNumber returns the number of nodes below a node, at every depth.
func (c *Conn) GetAllChildrenNumber(ctx context.Context, path string) (CountReply, error) {
	var rsp intResponse
	zxid, err := c.do(ctx, opGetAllChildrenNumber, &pathRequest{path: c.full(path)}, &rsp)
	return CountReply{Count: rsp.n, Zxid: zxid}, err
}

// WhoAmI returns the identities the server holds for the session (its IP address, and
// one for each auth added).
func (c *Conn) WhoAmI(ctx context.Context) (WhoAmIReply, error) {
	var rsp whoAmIResponse
	zxid, err := c.do(ctx, opWhoAmI, nil, &rsp)
	return WhoAmIReply{Clients: rsp.info, Zxid: zxid}, err
}

// AddAuth adds a credential to the session (an auth packet) and waits for the server to
// accept it. A server that refuses it (zk.ErrAuthFailed) also closes the connection. The
// Conn does not remember it: a later Dial sends the credentials in Config.Auth.
func (c *Conn) AddAuth(ctx context.Context, a Auth) error {
	r := c.wait(ctx, c.sendAuth(a))
	if r.err != nil {
		return r.err
	}
	return codeError(r.code, r.zxid)
}

// SetWatches sets watches again on the session, relative to zxid: the server fires at
// once those whose nodes changed after it. Config.Watches does it at Dial.
func (c *Conn) SetWatches(ctx context.Context, zxid int64, w Watches) (Reply, error) {
	var last Reply
	for _, r := range c.setWatchesBatches(w) {
		r.relativeZxid = zxid
		op := opSetWatches
		if r.v2 {
			op = opSetWatches2
		}
		rp := c.wait(ctx, c.send(op, xidSetWatches, r))
		if rp.err == nil {
			rp.err = codeError(rp.code, rp.zxid)
		}
		if rp.err != nil {
			return Reply{Zxid: rp.zxid}, rp.err
		}
		last.Zxid = rp.zxid
	}
	return last, nil
}

// WriteOp is an operation of a Multi: CreateOp, DeleteOp, SetDataOp or CheckOp.
type WriteOp interface {
	encodeOp(c chroot, e *encoder)
}

// ReadOp is an operation of a MultiRead: GetDataOp or GetChildrenOp.
type ReadOp interface {
	encodeRead(c chroot, e *encoder)
}

// CreateOp creates a node; its result has the node's Path and, from ZooKeeper 3.8, its
// Stat for a container or a TTL node only (the server answers the other modes as a
// create, not a create2).
type CreateOp struct {
	Path string
	Data []byte
	ACL  []zk.ACL
	Mode CreateMode
	TTL  time.Duration // for the TTL modes
}

// DeleteOp deletes a node at Version (-1: any).
type DeleteOp struct {
	Path    string
	Version int32
}

// SetDataOp replaces a node's data at Version (-1: any); its result has the Stat.
type SetDataOp struct {
	Path    string
	Data    []byte
	Version int32
}

// CheckOp requires a node to be at Version (-1: to exist).
type CheckOp struct {
	Path    string
	Version int32
}

// GetDataOp reads a node's data; its result has Data and Stat.
type GetDataOp struct{ Path string }

// GetChildrenOp lists a node's children; its result has Children.
type GetChildrenOp struct{ Path string }

func (o CreateOp) encodeOp(c chroot, e *encoder) {
	(&multiHeader{typ: o.Mode.opcode(), err: -1}).encode(e)
	c.createRequest(o.Path, o.Data, o.ACL, o.Mode, o.TTL).encode(e)
}

func (o DeleteOp) encodeOp(c chroot, e *encoder) {
	(&multiHeader{typ: opDelete, err: -1}).encode(e)
	(&versionRequest{path: c.full(o.Path), version: o.Version}).encode(e)
}

func (o SetDataOp) encodeOp(c chroot, e *encoder) {
	(&multiHeader{typ: opSetData, err: -1}).encode(e)
	(&setDataRequest{path: c.full(o.Path), data: o.Data, version: o.Version}).encode(e)
}

func (o CheckOp) encodeOp(c chroot, e *encoder) {
	(&multiHeader{typ: opCheck, err: -1}).encode(e)
	(&versionRequest{path: c.full(o.Path), version: o.Version}).encode(e)
}

func (o GetDataOp) encodeRead(c chroot, e *encoder) {
	(&multiHeader{typ: opGetData, err: -1}).encode(e)
	(&pathWatchRequest{path: c.full(o.Path)}).encode(e)
}

func (o GetChildrenOp) encodeRead(c chroot, e *encoder) {
	(&multiHeader{typ: opGetChildren, err: -1}).encode(e)
	(&pathWatchRequest{path: c.full(o.Path)}).encode(e)
}

// multiRequest is MultiOperationRecord: each operation after its header, then a header
// with done set.
type multiRequest struct {
	c     chroot
	write []WriteOp
	read  []ReadOp
}

func (r *multiRequest) encode(e *encoder) {
	for _, o := range r.write {
		o.encodeOp(r.c, e)
	}
	for _, o := range r.read {
		o.encodeRead(r.c, e)
	}
	(&multiHeader{typ: -1, done: true, err: -1}).encode(e)
}

// OpResult is the result of one operation of a Multi or MultiRead.
type OpResult struct {
	// Path is a created node's path.
	Path string
	// Stat is the Stat of a created node, of a node whose data was set or read.
	Stat *zk.Stat
	// Data is the data read.
	Data []byte
	// Children are the children listed.
	Children []string
	// Err is the operation's error: nil when it succeeded; in a failed Multi, ErrRolledBack
	// for the operations that did not fail themselves.
	Err error
}

// MultiReply is the reply to Multi and MultiRead: a result for each operation, in order.
type MultiReply struct {
	Results []OpResult
	Zxid    int64
}

// multiResponse is MultiResponse: a header and a result for each operation, then a
// header with done set.
type multiResponse struct {
	results []OpResult
	zxid    int64
}

func (r *multiResponse) decode(d *decoder) {
	for d.err == nil {
		var h multiHeader
		h.decode(d)
		if d.err != nil || h.done {
			return
		}
		var res OpResult
		switch h.typ {
		case opCreate:
			res.Path = d.string("path")
		case opCreate2:
			res.Path = d.string("path")
			res.Stat = d.stat()
		case opSetData:
			res.Stat = d.stat()
		case opDelete, opCheck:
		case opGetData:
			res.Data = d.buffer("data")
			res.Stat = d.stat()
		case opGetChildren:
			res.Children = d.strings("children")
		case opError:
			code := d.int32("err")
			if code == 0 {
				res.Err = ErrRolledBack
			} else {
				res.Err = codeError(code, r.zxid)
			}
		default:
			d.fail("multi result of type %d", h.typ)
			return
		}
		r.results = append(r.results, res)
	}
}

// Multi applies the operations atomically: all or none. When one fails, the error is
// that of the first that failed, wrapped with its index, and the reply has every
// operation's result.
func (c *Conn) Multi(ctx context.Context, ops ...WriteOp) (MultiReply, error) {
	return multiOutcome(c.multi(ctx, opMulti, &multiRequest{c: chroot(c.cfg.Chroot), write: ops}))
}

// multiOutcome is a Multi's error: that of its first operation that failed.
func multiOutcome(rep MultiReply, err error) (MultiReply, error) {
	if err != nil {
		return rep, err
	}
	for i, res := range rep.Results {
		if res.Err != nil && !errors.Is(res.Err, ErrRolledBack) {
			return rep, fmt.Errorf("wire: multi operation %d: %w", i, res.Err)
		}
	}
	return rep, nil
}

// MultiRead reads in one request: each operation has its own result, which may be an
// error (a node that does not exist) while the others succeed. The reads are not a
// snapshot: a write may be applied between two of them.
func (c *Conn) MultiRead(ctx context.Context, ops ...ReadOp) (MultiReply, error) {
	return c.multi(ctx, opMultiRead, &multiRequest{c: chroot(c.cfg.Chroot), read: ops})
}

func (c *Conn) multi(ctx context.Context, opcode int32, req *multiRequest) (MultiReply, error) {
	if err := ctx.Err(); err != nil {
		return MultiReply{}, err
	}
	return decodeMulti(c.wait(ctx, c.send(opcode, 0, req)), req.c)
}

// decodeMulti decodes the reply to a multi or a multiRead.
func decodeMulti(r reply, ch chroot) (MultiReply, error) {
	if r.err != nil {
		return MultiReply{}, r.err
	}
	rsp := multiResponse{zxid: r.zxid}
	if len(r.body) > 0 {
		d := &decoder{b: r.body}
		rsp.decode(d)
		if d.err != nil {
			return MultiReply{Zxid: r.zxid}, d.err
		}
	}
	for i := range rsp.results {
		if rsp.results[i].Path != "" {
			rsp.results[i].Path = ch.strip(rsp.results[i].Path)
		}
	}
	rep := MultiReply{Results: rsp.results, Zxid: r.zxid}
	if r.code != 0 && len(rsp.results) == 0 {
		return rep, codeError(r.code, r.zxid)
	}
	return rep, nil
}
