package framework_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// firstRequestBound is the most the first request of a fresh client may take, watched or
// not: a round trip to a local server takes milliseconds (under 100 ms in every round
// here, beside the soak); 2.5 s leaves room for a 2-core machine under full load running
// -race, and is half the 5 s a reconnect gate that waits for a set-watches request (which
// a new session never sends) costs.
const firstRequestBound = 2500 * time.Millisecond

// lateReceiveConn is a connection whose reader (go-zookeeper's receive loop) starts late:
// the first read deadline set once the server's first frame (the handshake's reply) has
// been read blocks until release returns true (polled) or 10 s have passed. go-zookeeper's
// receive loop sets that deadline before its first read, so nothing after the handshake
// is read until then: the moment a slow scheduler sometimes makes, made on demand.
type lateReceiveConn struct {
	net.Conn
	release func() bool

	mu    sync.Mutex
	hdr   []byte // the first frame's length, as read so far
	left  int    // bytes of the first frame still to read, once hdr is whole
	held  bool   // the receive loop was held once
	first bool   // the first frame was read whole
}

func (l *lateReceiveConn) Read(b []byte) (int, error) {
	n, err := l.Conn.Read(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	p := b[:n]
	for len(p) > 0 && len(l.hdr) < 4 {
		l.hdr = append(l.hdr, p[0])
		p = p[1:]
		if len(l.hdr) == 4 {
			l.left = int(binary.BigEndian.Uint32(l.hdr))
		}
	}
	if len(l.hdr) == 4 && !l.first {
		l.left -= min(len(p), l.left)
		l.first = l.left == 0
	}
	return n, err
}

func (l *lateReceiveConn) SetReadDeadline(t time.Time) error {
	l.mu.Lock()
	hold := l.first && !l.held && !t.IsZero()
	if hold {
		l.held = true
	}
	l.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); hold && !l.release() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return l.Conn.SetReadDeadline(t)
}

// A fresh client's first request is answered at once, watched or not. The
// watched read of a brand-new session used to wait 5 s (half of go-zookeeper's read
// deadline at most) whenever the receive loop started reading after the watch was
// registered: the reconnect gate held the reply for a set-watches request, which a new
// session never sends. Each round makes that moment on one client (lateReceiveConn), and
// also takes the first watched and unwatched reads of plain fresh clients; each must
// finish within firstRequestBound.
func TestFreshClientFirstRequestIsPrompt(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	setup := testutil.Connect(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := setup.Create(ctx, "/existing", []byte("x"))
	require.NoError(t, err)

	measure := func(name string, c *framework.Client, read func(context.Context, *framework.Client) error) {
		t.Helper()
		start := time.Now()
		require.NoError(t, read(ctx, c), name)
		took := time.Since(start)
		t.Logf("%s: first request took %v", name, took)
		assert.Less(t, took, firstRequestBound, "%s: the first request of a fresh client", name)
	}
	watched := func(ctx context.Context, c *framework.Client) error {
		_, _, w, err := c.GetDataW(ctx, "/existing")
		if err == nil && w == nil {
			t.Error("no watch")
		}
		return err
	}
	exists := func(ctx context.Context, c *framework.Client) error {
		_, _, err := c.ExistsW(ctx, "/existing")
		return err
	}
	plain := func(ctx context.Context, c *framework.Client) error {
		_, _, err := c.GetData(ctx, "/existing")
		return err
	}

	for round := 0; round < 4; round++ {
		// The receive loop starts once the watched read registered its watch.
		var self atomic.Pointer[framework.Client]
		dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
			conn, err := net.DialTimeout(network, address, timeout)
			if err != nil {
				return nil, err
			}
			return &lateReceiveConn{Conn: conn, release: func() bool {
				c := self.Load()
				return c != nil && c.Watches() > 0
			}}, nil
		}
		late := testutil.Connect(t, srv.ConnectString(), framework.WithDialer(dial), framework.WithSessionTimeout(30*time.Second))
		self.Store(late)
		measure("watched read, receive loop late", late, watched)

		for _, v := range []struct {
			name string
			read func(context.Context, *framework.Client) error
		}{{"getData with a watch", watched}, {"exists with a watch", exists}, {"getData", plain}} {
			c := testutil.Connect(t, srv.ConnectString(), framework.WithSessionTimeout(30*time.Second))
			measure(v.name, c, v.read)
			require.NoError(t, c.Close())
		}
		require.NoError(t, late.Close())
	}
}
