package testutil

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
)

// SessionGate is a dialer (framework.WithDialer) in front of another that fails every
// connection whose handshake resumes a banned session: a client cut off from the server
// (a DropConnections) cannot take that session up again, while a new session (a
// handshake with session id 0) gets through at once. A test makes a client end a session
// itself (a simulated Lost) while the server keeps that session, and its ephemeral nodes,
// alive until its timeout: the close go-zookeeper sends for it never gets through.
type SessionGate struct {
	next   framework.Dialer
	mu     sync.Mutex
	banned map[int64]bool
}

// NewSessionGate returns a gate in front of next.
func NewSessionGate(next framework.Dialer) *SessionGate {
	return &SessionGate{next: next, banned: map[int64]bool{}}
}

// Ban makes every later handshake that resumes session sid fail.
func (g *SessionGate) Ban(sid int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.banned[sid] = true
}

func (g *SessionGate) isBanned(sid int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.banned[sid]
}

// Dial is the gate's framework.Dialer.
func (g *SessionGate) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := g.next(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, g: g}, nil
}

// errBanned is what a write of a banned session's handshake fails with.
var errBanned = errors.New("testutil: the session is banned by the gate")

// gatedConn reads the session id of the connect request (the first bytes written: length
// 4, protocol version 4, last zxid 8, timeout 4, session id 8).
type gatedConn struct {
	net.Conn
	g       *SessionGate
	mu      sync.Mutex
	head    []byte
	checked bool
}

func (c *gatedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.checked {
		c.head = append(c.head, p...)
		if len(c.head) >= 28 {
			c.checked = true
			if sid := int64(binary.BigEndian.Uint64(c.head[20:28])); sid != 0 && c.g.isBanned(sid) {
				c.mu.Unlock()
				_ = c.Conn.Close()
				return 0, errBanned
			}
		}
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}
