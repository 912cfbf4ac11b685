package framework

import (
	"encoding/binary"
	"errors"
	"fmt"
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
		return newHandshakeConn(conn, deadline, limit), nil
	}
}

// handshakeConn is a server connection whose handshake (the connect request and the
// reply to it, the first frame the server sends) must be done by a deadline. Until then
// every read and write deadline go-zookeeper sets is cut to it; afterwards the
// connection is the plain one.
type handshakeConn struct {
	net.Conn
	deadline time.Time
	limit    time.Duration

	mu        sync.Mutex
	done      bool
	hdr       [4]byte // the first frame's length, as read so far
	hdrN      int
	remaining int       // bytes of the first frame's body still to read, once hdrN == 4
	readReq   time.Time // the read deadline go-zookeeper asked for last
	writeReq  time.Time // the write deadline go-zookeeper asked for last
}

func newHandshakeConn(conn net.Conn, deadline time.Time, limit time.Duration) *handshakeConn {
	h := &handshakeConn{Conn: conn, deadline: deadline, limit: limit}
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
	n, err := h.Conn.Read(b)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return n, err
	}
	h.consumeLocked(b[:n])
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && !h.done {
		err = fmt.Errorf("framework: %s: no reply to the connect request within %v: %w", h.RemoteAddr(), h.limit, err)
	}
	return n, err
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
