package wire

import "github.com/go-zookeeper/zk"

// The records of ZooKeeper's client protocol (zookeeper.jute), each with the method of
// the direction it travels in: encode for what the client sends, decode for what the
// server sends back. Field order is the wire order.

// request is a record the client sends.
type request interface{ encode(*encoder) }

// response is a record the server sends.
type response interface{ decode(*decoder) }

// connectRequest opens or resumes a session. It is the first frame on a connection and
// has no request header.
type connectRequest struct {
	protocolVersion int32
	lastZxidSeen    int64
	timeout         int32 // ms
	sessionID       int64
	password        []byte
	readOnly        bool // the client accepts a read-only server
}

func (r *connectRequest) encode(e *encoder) {
	e.int32(r.protocolVersion)
	e.int64(r.lastZxidSeen)
	e.int32(r.timeout)
	e.int64(r.sessionID)
	e.buffer(r.password)
	e.bool(r.readOnly)
}

// connectResponse answers a connectRequest. A server older than 3.4 sends no readOnly
// byte; its absence means false. A timeout of zero or less means the session expired.
type connectResponse struct {
	protocolVersion int32
	timeout         int32
	sessionID       int64
	password        []byte
	readOnly        bool
}

func (r *connectResponse) decode(d *decoder) {
	r.protocolVersion = d.int32("protocolVersion")
	r.timeout = d.int32("timeOut")
	r.sessionID = d.int64("sessionId")
	r.password = d.buffer("passwd")
	if d.err == nil && d.remaining() > 0 {
		r.readOnly = d.bool("readOnly")
	}
}

// requestHeader precedes every request after the connect request.
type requestHeader struct {
	xid    int32
	opcode int32
}

func (r *requestHeader) encode(e *encoder) {
	e.int32(r.xid)
	e.int32(r.opcode)
}

// replyHeader precedes every frame from the server after the connect response. Its zxid
// is the last transaction the server had applied when it sent the frame.
type replyHeader struct {
	xid  int32
	zxid int64
	err  int32
}

func (r *replyHeader) decode(d *decoder) {
	r.xid = d.int32("xid")
	r.zxid = d.int64("zxid")
	r.err = d.int32("err")
}

// watcherEvent is the body of a notification (xid -1).
type watcherEvent struct {
	typ   int32
	state int32
	path  string
}

func (r *watcherEvent) decode(d *decoder) {
	r.typ = d.int32("type")
	r.state = d.int32("state")
	r.path = d.string("path")
}

// authPacket adds credentials to the session (opcode auth, xid -4).
type authPacket struct {
	typ    int32
	scheme string
	auth   []byte
}

func (r *authPacket) encode(e *encoder) {
	e.int32(r.typ)
	e.string(r.scheme)
	e.buffer(r.auth)
}

// saslRequest is GetSASLRequest: a SASL token from the client (opcode sasl, an ordinary
// xid). The first of DIGEST-MD5 is empty.
type saslRequest struct{ token []byte }

func (r *saslRequest) encode(e *encoder) { e.buffer(r.token) }

// saslResponse is SetSASLResponse: the server's SASL token (a challenge, or its last
// message); nil after a refusal.
type saslResponse struct{ token []byte }

func (r *saslResponse) decode(d *decoder) { r.token = d.buffer("token") }

// pathWatchRequest is ExistsRequest, GetDataRequest, GetChildrenRequest and
// GetChildren2Request: a path and whether to leave a watch.
type pathWatchRequest struct {
	path  string
	watch bool
}

func (r *pathWatchRequest) encode(e *encoder) {
	e.string(r.path)
	e.bool(r.watch)
}

// pathRequest is SyncRequest, GetACLRequest, GetAllChildrenNumberRequest and
// GetEphemeralsRequest: a path alone.
type pathRequest struct{ path string }

func (r *pathRequest) encode(e *encoder) { e.string(r.path) }

// createRequest is CreateRequest, and CreateTTLRequest when withTTL is set.
type createRequest struct {
	path    string
	data    []byte
	acl     []zk.ACL
	flags   int32
	withTTL bool
	ttl     int64 // ms
}

func (r *createRequest) encode(e *encoder) {
	e.string(r.path)
	e.buffer(r.data)
	e.acls(r.acl)
	e.int32(r.flags)
	if r.withTTL {
		e.int64(r.ttl)
	}
}

// versionRequest is DeleteRequest and CheckVersionRequest: a path and the version it
// must have (-1: any).
type versionRequest struct {
	path    string
	version int32
}

func (r *versionRequest) encode(e *encoder) {
	e.string(r.path)
	e.int32(r.version)
}

// setDataRequest replaces a node's data.
type setDataRequest struct {
	path    string
	data    []byte
	version int32
}

func (r *setDataRequest) encode(e *encoder) {
	e.string(r.path)
	e.buffer(r.data)
	e.int32(r.version)
}

// setACLRequest replaces a node's ACL.
type setACLRequest struct {
	path    string
	acl     []zk.ACL
	version int32
}

func (r *setACLRequest) encode(e *encoder) {
	e.string(r.path)
	e.acls(r.acl)
	e.int32(r.version)
}

// modeRequest is AddWatchRequest (mode), CheckWatchesRequest and RemoveWatchesRequest
// (type): a path and an int.
type modeRequest struct {
	path string
	mode int32
}

func (r *modeRequest) encode(e *encoder) {
	e.string(r.path)
	e.int32(r.mode)
}

// setWatchesRequest is SetWatches, and SetWatches2 when v2 is set (the only one that can
// carry persistent watches; servers before 3.6 do not know it).
type setWatchesRequest struct {
	relativeZxid        int64
	data, exist, child  []string
	persistent, recurse []string
	v2                  bool
}

func (r *setWatchesRequest) encode(e *encoder) {
	e.int64(r.relativeZxid)
	e.strings(nonNil(r.data))
	e.strings(nonNil(r.exist))
	e.strings(nonNil(r.child))
	if r.v2 {
		e.strings(nonNil(r.persistent))
		e.strings(nonNil(r.recurse))
	}
}

// nonNil makes a nil list an empty one: the server reads a vector of -1 elements as
// null and fails on it where it expects a list.
func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// pathResponse is CreateResponse and SyncResponse.
type pathResponse struct{ path string }

func (r *pathResponse) decode(d *decoder) { r.path = d.string("path") }

// create2Response answers create2, createContainer and createTTL.
type create2Response struct {
	path string
	stat *zk.Stat
}

func (r *create2Response) decode(d *decoder) {
	r.path = d.string("path")
	r.stat = d.stat()
}

// statResponse is ExistsResponse, SetDataResponse and SetACLResponse.
type statResponse struct{ stat *zk.Stat }

func (r *statResponse) decode(d *decoder) { r.stat = d.stat() }

// getDataResponse answers getData.
type getDataResponse struct {
	data []byte
	stat *zk.Stat
}

func (r *getDataResponse) decode(d *decoder) {
	r.data = d.buffer("data")
	r.stat = d.stat()
}

// stringsResponse is GetChildrenResponse and GetEphemeralsResponse.
type stringsResponse struct{ list []string }

func (r *stringsResponse) decode(d *decoder) { r.list = d.strings("list") }

// getChildren2Response answers getChildren2.
type getChildren2Response struct {
	children []string
	stat     *zk.Stat
}

func (r *getChildren2Response) decode(d *decoder) {
	r.children = d.strings("children")
	r.stat = d.stat()
}

// getACLResponse answers getACL.
type getACLResponse struct {
	acl  []zk.ACL
	stat *zk.Stat
}

func (r *getACLResponse) decode(d *decoder) {
	r.acl = d.acls("acl")
	r.stat = d.stat()
}

// intResponse is GetAllChildrenNumberResponse.
type intResponse struct{ n int32 }

func (r *intResponse) decode(d *decoder) { r.n = d.int32("totalNumber") }

// ClientInfo is one identity the server holds for the session, as whoAmI lists them: the
// scheme ("ip", "digest", ...) and the user within it.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// whoAmIResponse answers whoAmI.
type whoAmIResponse struct{ info []ClientInfo }

func (r *whoAmIResponse) decode(d *decoder) {
	n, isNil := d.length("clientInfo", 8)
	if isNil {
		return
	}
	r.info = make([]ClientInfo, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		r.info = append(r.info, ClientInfo{AuthScheme: d.string("authScheme"), User: d.string("user")})
	}
}

// emptyResponse is the body of replies that carry none (delete, setWatches, addWatch,
// removeWatches, checkWatches, closeSession).
type emptyResponse struct{}

func (emptyResponse) decode(*decoder) {}

// multiHeader precedes each operation of a multi or multiRead request and each result of
// its response; one with done set ends the list.
type multiHeader struct {
	typ  int32
	done bool
	err  int32
}

func (r *multiHeader) encode(e *encoder) {
	e.int32(r.typ)
	e.bool(r.done)
	e.int32(r.err)
}

func (r *multiHeader) decode(d *decoder) {
	r.typ = d.int32("multi type")
	r.done = d.bool("multi done")
	r.err = d.int32("multi err")
}
