package zktest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// ExpireSession makes the server end session sessionID now, as Curator's KillSession
// does (and as ZooKeeper's FAQ says to simulate an expiry): it opens a second connection
// to the session, with its id and password, and closes the session over it. The server
// then deletes the session's ephemeral nodes and ends its watches, as when the session
// times out; the session's own client is disconnected and, when it reconnects, is told
// that the session expired (a framework.Client reports Lost, then Connected on a new
// session). It returns once the server no longer has the session (so also at once for
// a session that had already ended), or ctx's error.
//
// The password is the one the server gives every session: ZooKeeper derives it from the
// session id (ZooKeeperServer.generatePasswd), so the client need not be asked for it.
//
// It is the way to end one client's session at once. To cut a client off instead (its
// session then expires on the server after the session timeout, while the client hears
// nothing), connect it through a Proxy and Stall it; DropConnections closes its
// connection without ending the session.
func (s *Server) ExpireSession(ctx context.Context, sessionID int64) error {
	return ExpireSession(ctx, s.Addr(), sessionID)
}

// ExpireSession is Server.ExpireSession for the ensemble: the session is closed over a
// connection to one of its members (any member serves any session).
func (e *Ensemble) ExpireSession(ctx context.Context, sessionID int64) error {
	return ExpireSession(ctx, e.ConnectString(), sessionID)
}

// ExpireSession is Server.ExpireSession for the servers of a connect string
// (host:port[,host:port...][/chroot]; the chroot is ignored): a server named by
// ZK_TEST_CONNECT, a container, one started by another program.
func ExpireSession(ctx context.Context, connect string, sessionID int64) error {
	if sessionID == 0 {
		return errors.New("zktest: ExpireSession: session id 0 is no session (a client not connected yet?)")
	}
	hosts := connect
	if i := strings.IndexByte(hosts, '/'); i >= 0 {
		hosts = hosts[:i]
	}
	addrs := strings.Split(hosts, ",")
	var last error
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if last != nil {
				return fmt.Errorf("zktest: session 0x%x not expired: %w (last attempt: %v)", sessionID, err, last)
			}
			return fmt.Errorf("zktest: session 0x%x not expired: %w", sessionID, err)
		}
		// The session's own client, whose connection the server closes when ours comes in,
		// may come back first and have ours closed in turn: then try again.
		done, err := closeSession(ctx, strings.TrimSpace(addrs[attempt%len(addrs)]), sessionID)
		if done {
			return nil
		}
		last = err
		if attempt > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// Opcodes and sizes of ZooKeeper's wire protocol (zookeeper.jute: ConnectRequest,
// ConnectResponse, RequestHeader, ReplyHeader; OpCode.closeSession).
const (
	opCloseSession   = -11
	passwdLen        = 16
	connectReqLen    = 4 + 8 + 4 + 8 + 4 + passwdLen + 1 // protocol version, last zxid, timeout, session id, passwd, read-only
	closeSessionXid  = 1
	sessionIOTimeout = 10 * time.Second
)

// closeSession connects to session sid at addr and closes it. done says that the server
// no longer has the session: it closed it for us, or said at the handshake that it has
// no such session.
func closeSession(ctx context.Context, addr string, sid int64) (done bool, err error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, sessionIOTimeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	deadline := time.Now().Add(sessionIOTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)

	// ConnectRequest: resume session sid with its password.
	req := make([]byte, 4+connectReqLen)
	b := req[4:]
	binary.BigEndian.PutUint32(req, connectReqLen)
	binary.BigEndian.PutUint32(b[0:], 0)     // protocolVersion
	binary.BigEndian.PutUint64(b[4:], 0)     // lastZxidSeen: none, so that any server takes it
	binary.BigEndian.PutUint32(b[12:], 4000) // timeOut (ms): the session keeps its own
	binary.BigEndian.PutUint64(b[16:], uint64(sid))
	binary.BigEndian.PutUint32(b[24:], passwdLen)
	copy(b[28:], sessionPassword(sid))
	b[28+passwdLen] = 0 // readOnly: false
	if _, err := conn.Write(req); err != nil {
		return false, err
	}
	// ConnectResponse: protocolVersion, timeOut, sessionId, passwd[, readOnly]. A timeOut
	// of 0 is the server's "no such session" (expired, closed or never made).
	resp, err := readFrame(conn)
	if err != nil {
		return false, fmt.Errorf("zktest: %s: reading the reply to the connect request: %w", addr, err)
	}
	if len(resp) < 16 {
		return false, fmt.Errorf("zktest: %s: connect reply of %d bytes", addr, len(resp))
	}
	if int32(binary.BigEndian.Uint32(resp[4:])) <= 0 {
		return true, nil
	}
	if got := int64(binary.BigEndian.Uint64(resp[8:])); got != sid {
		return false, fmt.Errorf("zktest: %s: asked for session 0x%x, got 0x%x", addr, sid, got)
	}

	// RequestHeader{xid, closeSession}, no body; the reply is ReplyHeader{xid, zxid, err}.
	var closeReq [12]byte
	binary.BigEndian.PutUint32(closeReq[0:], 8)
	binary.BigEndian.PutUint32(closeReq[4:], closeSessionXid)
	op := int32(opCloseSession)
	binary.BigEndian.PutUint32(closeReq[8:], uint32(op))
	if _, err := conn.Write(closeReq[:]); err != nil {
		return false, err
	}
	for {
		reply, err := readFrame(conn)
		if err != nil {
			return false, fmt.Errorf("zktest: %s: reading the reply to closeSession: %w", addr, err)
		}
		if len(reply) < 16 || int32(binary.BigEndian.Uint32(reply)) != closeSessionXid {
			continue // not our reply (nothing else is expected: no watches on this connection)
		}
		if code := int32(binary.BigEndian.Uint32(reply[12:])); code != 0 {
			return false, fmt.Errorf("zktest: %s: closeSession failed with ZooKeeper error %d", addr, code)
		}
		return true, nil
	}
}

// readFrame reads one length-prefixed frame.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// sessionPassword returns the password ZooKeeper gives session sid:
// ZooKeeperServer.generatePasswd, 16 bytes of java.util.Random seeded with
// sid ^ superSecret (0xB3415C00), the rule the server checks a reconnection against.
func sessionPassword(sid int64) []byte {
	const (
		superSecret = 0xB3415C00
		multiplier  = 0x5DEECE66D
		mask        = 1<<48 - 1
	)
	seed := (uint64(sid^superSecret) ^ multiplier) & mask // new Random(seed)
	next32 := func() int32 {
		seed = (seed*multiplier + 0xB) & mask
		return int32(seed >> 16)
	}
	p := make([]byte, passwdLen)
	for i := 0; i < len(p); { // Random.nextBytes
		for rnd, n := next32(), min(len(p)-i, 4); n > 0; n-- {
			p[i] = byte(rnd)
			rnd >>= 8
			i++
		}
	}
	return p
}
