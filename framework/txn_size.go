package framework

import "github.com/go-zookeeper/zk"

// txnMargin is the room a transaction keeps below the packet limit beside its exact
// encoded size (multiSize).
const txnMargin = 64

// multiSize is the size of a multi request as go-zookeeper encodes it: its request header
// and body, which the server checks against its jute.maxbuffer (the 4-byte length prefix
// is not counted there). A transaction's size is known exactly, ACLs included, so it need
// not keep the room a single request keeps for them (packetOverhead): an item near the
// limit of CheckDataSize can still be moved in one transaction with a few paths.
func multiSize(reqs []any) int {
	str := func(s string) int { return 4 + len(s) }
	n := 8 + 9 // the request header (xid, type); the closing multi header
	for _, r := range reqs {
		n += 9 // the op's multi header (type, done, err)
		switch r := r.(type) {
		case *zk.CreateRequest:
			n += str(r.Path) + 4 + len(r.Data) + aclSize(r.Acl) + 4 // path, data, ACL, flags
		case *zk.DeleteRequest:
			n += str(r.Path) + 4
		case *zk.SetDataRequest:
			n += str(r.Path) + 4 + len(r.Data) + 4
		case *zk.CheckVersionRequest:
			n += str(r.Path) + 4
		default:
			n += packetOverhead // not made by Transaction: be safe
		}
	}
	return n
}

// aclSize is the size of an ACL as go-zookeeper encodes it: its count, then each entry's
// permissions, scheme and id.
func aclSize(acl []zk.ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + 4 + len(a.Scheme) + 4 + len(a.ID)
	}
	return n
}

// createSize is the size of a create request as go-zookeeper encodes it (header, path,
// data, ACL, flags and, for a TTL mode, the TTL), which the server checks against its
// jute.maxbuffer. The ACL is counted exactly: a few digest entries take hundreds of bytes.
func createSize(full string, dataLen int, acl []zk.ACL, ttl bool) int {
	n := 8 + 4 + len(full) + 4 + dataLen + aclSize(acl) + 4 // header, path, data, ACL, flags
	if ttl {
		n += 8
	}
	return n
}
