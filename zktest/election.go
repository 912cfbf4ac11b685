package zktest

import (
	"encoding/binary"
	"io"
)

// ZooKeeper's election connections open with an initial message: a protocol version
// (QuorumCnxManager's PROTOCOL_VERSION_V1 and _V2), the sender's id, and the sender's
// election address(es) as a length-prefixed "host:port[|host:port...]" string.
const (
	electionProtocolV1 = -65536
	electionProtocolV2 = -65535
	maxElectionAddr    = 4096
)

// setElectionRewrite makes the proxy replace the election address that a member announces
// on connections to target with addr. A member that receives a connection from a member of
// lower id closes it and connects back to the address announced in it (ZooKeeper 3.5+):
// the sender's own election port, which is not behind a proxy. Without the rewrite, that
// connection back goes around the peer proxies and is never cut, so an isolated member
// still takes part in elections: with the highest zxid it wins its followers' votes but
// cannot lead them, and the majority re-elects it round after round (each ended by
// initLimit) until the election's back-off lets the majority agree without it — seen here
// as a new leader after 15–30 s, and in stressed runs after more than 90 s. With it, the
// connection back goes through the proxy from the receiver to the sender, which Isolate
// and Partition cut like any other.
func (p *Proxy) setElectionRewrite(target, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rewrite == nil {
		p.rewrite = map[string]string{}
	}
	p.rewrite[target] = addr
}

// rewriteElectionHello reads the initial message of an election connection from src and
// returns it with the announced address replaced by addr. A stream that does not start
// with a message of a known protocol version is returned as read, unchanged.
func rewriteElectionHello(src io.Reader, addr string) ([]byte, error) {
	head := make([]byte, 20)
	if _, err := io.ReadFull(src, head); err != nil {
		return head, err
	}
	version := int64(binary.BigEndian.Uint64(head))
	if version != electionProtocolV1 && version != electionProtocolV2 {
		return head, nil
	}
	n := int32(binary.BigEndian.Uint32(head[16:]))
	if n <= 0 || n > maxElectionAddr {
		return head, nil
	}
	old := make([]byte, n)
	if _, err := io.ReadFull(src, old); err != nil {
		return append(head, old...), err
	}
	out := make([]byte, 0, 20+len(addr))
	out = append(out, head[:16]...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(addr)))
	return append(out, addr...), nil
}
