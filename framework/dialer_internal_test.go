package framework

import (
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// deadlineConn records the deadlines set on a connection.
type deadlineConn struct {
	net.Conn
	mu          sync.Mutex
	read, write time.Time
}

func (d *deadlineConn) SetDeadline(t time.Time) error {
	d.mu.Lock()
	d.read, d.write = t, t
	d.mu.Unlock()
	return d.Conn.SetDeadline(t)
}

func (d *deadlineConn) SetReadDeadline(t time.Time) error {
	d.mu.Lock()
	d.read = t
	d.mu.Unlock()
	return d.Conn.SetReadDeadline(t)
}

func (d *deadlineConn) SetWriteDeadline(t time.Time) error {
	d.mu.Lock()
	d.write = t
	d.mu.Unlock()
	return d.Conn.SetWriteDeadline(t)
}

func (d *deadlineConn) deadlines() (read, write time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.read, d.write
}

// Until the first frame from the server is read whole, no deadline goes past the
// handshake's; afterwards the deadlines asked for apply, the last ones asked for first.
func TestHandshakeConnCapsDeadlinesUntilFirstFrame(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	rec := &deadlineConn{Conn: client}
	limit := time.Hour
	hs := time.Now().Add(limit)
	h := newHandshakeConn(rec, hs, limit)
	defer h.Close()

	if r, w := rec.deadlines(); !r.Equal(hs) || !w.Equal(hs) {
		t.Fatalf("a new connection's deadlines are %v/%v, want the handshake's %v", r, w, hs)
	}
	later, earlier := hs.Add(time.Hour), hs.Add(-time.Minute)
	for _, c := range []struct {
		ask, want time.Time
	}{{time.Time{}, hs}, {later, hs}, {earlier, earlier}} {
		_ = h.SetReadDeadline(c.ask)
		_ = h.SetWriteDeadline(c.ask)
		if r, w := rec.deadlines(); !r.Equal(c.want) || !w.Equal(c.want) {
			t.Errorf("asked %v during the handshake, got %v/%v, want %v", c.ask, r, w, c.want)
		}
	}
	_ = h.SetReadDeadline(time.Time{})
	_ = h.SetWriteDeadline(later)

	// The first frame (length 3) arrives in pieces.
	go func() {
		for _, p := range [][]byte{{0, 0}, {0, 3, 'a'}, {'b'}, {'c', 0}} {
			if _, err := server.Write(p); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 2)
	for got := 0; got < 7; {
		n, err := h.Read(buf[:min(2, 7-got)])
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		got += n
		if r, _ := rec.deadlines(); got < 7 && !r.Equal(hs) {
			t.Fatalf("after %d bytes of the first frame the read deadline is %v, want %v", got, r, hs)
		}
	}
	if r, w := rec.deadlines(); !r.IsZero() || !w.Equal(later) {
		t.Errorf("after the handshake the deadlines are %v/%v, want the last asked for: none/%v", r, w, later)
	}
	_ = h.SetReadDeadline(later)
	if r, _ := rec.deadlines(); !r.Equal(later) {
		t.Errorf("after the handshake a deadline passes unchanged, got %v", r)
	}
}

// A server that never answers makes the read fail at the handshake deadline, with an
// error that says so.
func TestHandshakeConnSilentServer(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	h := newHandshakeConn(client, time.Now().Add(50*time.Millisecond), 50*time.Millisecond)
	defer h.Close()
	_ = h.SetReadDeadline(time.Now().Add(time.Hour))
	_, err := h.Read(make([]byte, 4))
	if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "no reply to the connect request") {
		t.Fatalf("got %v, want a handshake timeout", err)
	}
}
