package framework

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// handshakeTimeout bounds a connection attempt, from the dial to the server's reply to
// the connect request: the connection timeout, and at most the session timeout divided
// by the number of servers, as ZooKeeper's own Java client does, so that a client whose
// server hangs still has time to reach another before its session expires.
// go-zookeeper alone would wait ten times its receive timeout (about 6.7 session
// timeouts) for a server that accepted the connection and never answers.
func (c *Client) handshakeTimeout() time.Duration {
	session := time.Duration(c.negotiated.Load())
	if session <= 0 {
		session = c.opts.sessionTimeout
	}
	return min(c.opts.connectionTimeout, session/time.Duration(len(c.servers)))
}

// zkDialer is the dialer given to go-zookeeper: the configured one, whose connections
// must finish the handshake within handshakeTimeout.
func (c *Client) zkDialer() zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		limit := c.handshakeTimeout()
		deadline := time.Now().Add(limit)
		conn, err := c.opts.dialer(network, address, min(timeout, limit))
		if err != nil {
			return nil, err
		}
		if c.opts.tls != nil { // TLS over the configured dialer, within the same bound
			if conn, err = c.tlsHandshake(conn, address, deadline); err != nil {
				return nil, err
			}
		}
		h := newHandshakeConn(conn, deadline, limit)
		h.negotiated = c.setNegotiated
		h.outcome = func(err error) { c.dialErr.Store(dialFailure{err}) }
		h.plain = c.opts.tls == nil
		// With credentials go-zookeeper writes its set-watches request only once the auth
		// it re-sends was answered, but reads its last zxid for it at once: holding that
		// answer until the request is written would stall every reconnection for the
		// gate's whole wait (and, when that reaches go-zookeeper's read deadline, cost the
		// connection and the session). Such a client's first reply is held briefly
		// instead, as a new session's (see gate).
		h.watched = c.watches.armedAny
		h.auth = len(c.opts.auth) > 0
		return h, nil
	}
}

// opSetWatches is the opcode of the request go-zookeeper sends after a reconnection to
// set the watches of the session again.
const opSetWatches = 101

// setWatchesWait bounds how long the first reply after a reconnection is held for the
// set-watches request (see handshakeConn.gate) when the client believes watches are set
// but go-zookeeper sends none (it should not: the gate holds only a reconnection of a
// session whose watches were set and have not fired). It was 1 s: under stress-ng with
// -race, go-zookeeper once took longer than that between the handshake and its
// set-watches request, the gate let the replies through, and the race detector caught
// the race the gate is for (CI run 37, TestEnterReplacesOldSessionNode).
const setWatchesWait = 5 * time.Second

// newSessionHold is how long the first reply of a new session is held (see
// handshakeConn.gate): long against the few statements go-zookeeper runs before its
// sendSetWatches, short against a session's start.
const newSessionHold = 10 * time.Millisecond

// handshakeConn is a server connection whose handshake (the connect request and the
// reply to it, the first frame the server sends) must be done by a deadline. Until then
// every read and write deadline go-zookeeper sets is cut to it; afterwards the
// connection is the plain one.
type handshakeConn struct {
	net.Conn
	deadline time.Time
	limit    time.Duration

	mu         sync.Mutex
	done       bool
	hdr        [4]byte // the first frame's length, as read so far
	hdrN       int
	remaining  int     // bytes of the first frame's body still to read, once hdrN == 4
	body       [8]byte // the first frame's body's start: protocol version, session timeout
	bodyN      int
	timeout    time.Duration       // the session timeout the server granted, once read
	negotiated func(time.Duration) // told the granted session timeout (nil: nobody)
	outcome    func(error)         // told the handshake's failure, or nil once it is done (nil: nobody)
	plain      bool                // the client speaks no TLS (for a hint in errors)
	readReq    time.Time           // the read deadline go-zookeeper asked for last
	writeReq   time.Time           // the write deadline go-zookeeper asked for last

	// After the handshake, the first read is held (gate) until go-zookeeper has written
	// its set-watches request, when watches is true. go-zookeeper v1.0.4 reads its last
	// zxid for that request on one goroutine while its receive loop may already write it
	// for a reply on another (a data race, upstream go-zookeeper/zk PR #35): holding the
	// replies until the request is written orders the read before the write.
	watched   func() bool   // whether the client has watches set (nil: never hold)
	sent      bool          // the connect request was written
	newSess   bool          // it asked for a new session (session id 0): no watches to set again
	auth      bool          // the client re-sends credentials after the handshake
	gated     bool          // the first read after the handshake went through the gate
	reported  bool          // outcome was told the handshake succeeded
	setWatch  chan struct{} // closed once a set-watches request was written
	closed    chan struct{} // closed by Close
	once      sync.Once
	closeOnce sync.Once
}

func newHandshakeConn(conn net.Conn, deadline time.Time, limit time.Duration) *handshakeConn {
	h := &handshakeConn{Conn: conn, deadline: deadline, limit: limit,
		setWatch: make(chan struct{}), closed: make(chan struct{})}
	_ = conn.SetDeadline(deadline) // go-zookeeper ignores deadline errors too
	return h
}

// capped returns t cut to the handshake deadline (no deadline is the latest of all).
func (h *handshakeConn) capped(t time.Time) time.Time {
	if t.IsZero() || t.After(h.deadline) {
		return h.deadline
	}
	return t
}

func (h *handshakeConn) Read(b []byte) (int, error) {
	h.gate()
	n, err := h.Conn.Read(b)
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return n, err
	}
	h.consumeLocked(b[:n])
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && !h.done {
		err = fmt.Errorf("framework: %s: no reply to the connect request within %v: %w", h.RemoteAddr(), h.limit, err)
	} else if err != nil && !h.done {
		hint := ""
		if h.plain && errors.Is(err, io.EOF) {
			hint = " (a secure client port? it needs WithTLS)"
		}
		err = fmt.Errorf("framework: %s: connection lost before the reply to the connect request%s: %w", h.RemoteAddr(), hint, err)
	}
	granted := h.done && h.timeout > 0
	// Connect's error names the last handshake's failure, until one succeeds.
	var report func(error)
	var failure error
	if err != nil && !h.done {
		report, failure = h.outcome, err
	} else if h.done && !h.reported {
		h.reported, report = true, h.outcome
	}
	h.mu.Unlock()
	if report != nil {
		report(failure)
	}
	// The server's reply is read whole before go-zookeeper sees it: the client knows the
	// granted timeout before it reports Connected.
	if granted && h.negotiated != nil {
		h.negotiated(h.timeout)
	}
	return n, err
}

// gate holds the first read after the handshake of a session that goes on (not a new
// one), when the client has watches set on it that have not fired, until go-zookeeper
// wrote its set-watches request (its last zxid is read by then), for at most
// setWatchesWait, or until the connection is closed. Only the receive loop reads after
// the handshake. A new session is held for newSessionHold only: go-zookeeper has no
// watches to set again for it (a fresh client has none yet; an expired session's ended
// with it), and sends no request to wait for, while the client may already be arming a
// watch whose reply is the one held (a fresh client's first watched read
// would wait 5 s).
func (h *handshakeConn) gate() {
	h.mu.Lock()
	if !h.done || h.gated {
		h.mu.Unlock()
		return
	}
	h.gated = true
	newSess := h.newSess
	h.mu.Unlock()
	if newSess || (h.auth && h.watched != nil && h.watched()) {
		// A new session has no watches to set again, but go-zookeeper's loop goroutine
		// still has to pass sendSetWatches, right after it started the receive loop: a
		// watch armed by a reply read before that (the client arms watches at once on a
		// new session) makes it read the last zxid while this loop writes it for the
		// next reply. There is nothing on the wire to wait for; holding the first reply
		// for newSessionHold gives that goroutine the few microseconds it needs even on
		// a loaded machine (a mitigation of the upstream race, not a proof). A client with
		// credentials and watches, resuming its session, is in the same case: the reply
		// to its auth is the first, and its set-watches request waits for it.
		t := time.NewTimer(newSessionHold)
		defer t.Stop()
		select {
		case <-h.closed:
		case <-t.C:
		}
		return
	}
	if h.watched == nil || !h.watched() {
		return
	}
	// Never past half the time go-zookeeper gave the read: held up to its deadline,
	// the read would time out and the connection drop.
	wait := setWatchesWait
	h.mu.Lock()
	if !h.readReq.IsZero() {
		wait = min(wait, time.Until(h.readReq)/2)
	}
	h.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-h.setWatch:
	case <-h.closed:
	case <-t.C:
	}
}

// connectSessionAt is where the session id sits in a connect request frame: after the
// length, the protocol version (4 bytes), the last zxid seen (8) and the timeout (4).
const connectSessionAt = 4 + 4 + 8 + 4

// Write notes whether the connect request (the first frame written) asks for a new
// session, and a set-watches request after the handshake: go-zookeeper writes one whole
// frame per call (the length, then the request header: xid, opcode).
func (h *handshakeConn) Write(b []byte) (int, error) {
	h.mu.Lock()
	if !h.sent {
		h.sent = true
		h.newSess = len(b) >= connectSessionAt+8 && binary.BigEndian.Uint64(b[connectSessionAt:]) == 0
	}
	h.mu.Unlock()
	if len(b) >= 12 && int32(binary.BigEndian.Uint32(b[8:12])) == opSetWatches {
		h.mu.Lock()
		done := h.done
		h.mu.Unlock()
		if done {
			h.once.Do(func() { close(h.setWatch) })
		}
	}
	return h.Conn.Write(b)
}

// Close closes the connection and lets a held read go on (to fail).
func (h *handshakeConn) Close() error {
	h.closeOnce.Do(func() { close(h.closed) })
	return h.Conn.Close()
}

// consumeLocked follows the first frame through p, the bytes just read; once it is
// whole, the handshake is done and go-zookeeper's own deadlines apply.
func (h *handshakeConn) consumeLocked(p []byte) {
	for len(p) > 0 && h.hdrN < len(h.hdr) {
		h.hdr[h.hdrN] = p[0]
		h.hdrN++
		p = p[1:]
		if h.hdrN == len(h.hdr) {
			h.remaining = int(binary.BigEndian.Uint32(h.hdr[:]))
		}
	}
	if h.hdrN < len(h.hdr) {
		return
	}
	if h.bodyN < len(h.body) {
		k := copy(h.body[h.bodyN:], p[:min(len(p), h.remaining)])
		h.bodyN += k
		if h.bodyN == len(h.body) {
			h.timeout = time.Duration(int32(binary.BigEndian.Uint32(h.body[4:]))) * time.Millisecond
		}
	}
	h.remaining -= min(len(p), h.remaining)
	if h.remaining == 0 {
		h.done = true
		_ = h.Conn.SetReadDeadline(h.readReq)
		_ = h.Conn.SetWriteDeadline(h.writeReq)
	}
}

func (h *handshakeConn) SetDeadline(t time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readReq, h.writeReq = t, t
	if h.done {
		return h.Conn.SetDeadline(t)
	}
	return h.Conn.SetDeadline(h.capped(t))
}

func (h *handshakeConn) SetReadDeadline(t time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readReq = t
	if h.done {
		return h.Conn.SetReadDeadline(t)
	}
	return h.Conn.SetReadDeadline(h.capped(t))
}

func (h *handshakeConn) SetWriteDeadline(t time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writeReq = t
	if h.done {
		return h.Conn.SetWriteDeadline(t)
	}
	return h.Conn.SetWriteDeadline(h.capped(t))
}
