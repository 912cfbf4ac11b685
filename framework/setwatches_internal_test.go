package framework

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// After a reconnection with watches set, go-zookeeper v1.0.4 reads its last zxid (for
// the set-watches request) on its connect loop while its receive loop may already write
// it for the reply to a request queued during the disconnection: a data race (upstream
// go-zookeeper/zk PR #35) that `go test -race` reports. The client holds the first reply
// after the handshake until the set-watches request was written, which orders the two.
// Requests are queued on the raw connection while the proxy stalls the reconnection, so
// they go out first once it heals; the race detector checks the ordering. The race needs
// go-zookeeper's connect loop to be descheduled for a network round trip between starting
// its loops and reading the zxid, which only a loaded machine does: this test cannot make
// it fail on demand (TestGateHoldsFirstReadUntilSetWatches checks the mechanism).
func TestReconnectRepliesAfterSetWatches(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, err := New(srv.ConnectString(), WithDialer(proxy.Dialer()), WithSessionTimeout(30*time.Second))
	require.NoError(t, err)
	require.NoError(t, c.Start())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntilConnected(ctx))
	_, _, err = c.ExistsW(ctx, "/watched")
	require.NoError(t, err)

	for round := 0; round < 5; round++ {
		suspended := make(chan struct{})
		var once sync.Once
		remove := c.AddListener(func(s State) {
			if s == Suspended {
				once.Do(func() { close(suspended) })
			}
		})
		accepted := proxy.Accepted()
		proxy.Stall()
		proxy.DropConnections()
		select {
		case <-suspended:
		case <-ctx.Done():
			t.Fatal("not suspended")
		}
		remove()
		// The new connection is being made (go-zookeeper flushed its unsent requests
		// before it dialled): requests queued now go out on it, first.
		for proxy.Accepted() == accepted {
			select {
			case <-ctx.Done():
				t.Fatal("no new connection")
			case <-time.After(5 * time.Millisecond):
			}
		}
		conn := c.loadConn()
		var started, done sync.WaitGroup
		for i := 0; i < 8; i++ {
			started.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				started.Done()
				_, _, _ = conn.Get("/")
			}()
		}
		started.Wait()
		proxy.Heal()
		done.Wait()
		require.NoError(t, c.BlockUntilConnected(ctx))
	}
}

// frame is a ZooKeeper frame: its length, then body.
func frame(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

// request is a request frame with xid and opcode (and no payload).
func request(xid, opcode int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	return frame(binary.BigEndian.AppendUint32(b, uint32(opcode)))
}

// After the handshake (the first frame read), the first read waits for a set-watches
// request to be written when the client has watches, and only then.
func TestGateHoldsFirstReadUntilSetWatches(t *testing.T) {
	for _, watched := range []bool{true, false} {
		client, server := net.Pipe()
		h := newHandshakeConn(client, time.Now().Add(time.Minute), time.Minute)
		h.watched = func() bool { return watched }
		go func() {
			_, _ = server.Write(frame(make([]byte, 16))) // the handshake's reply
			_, _ = server.Write(frame([]byte{1, 2, 3, 4}))
		}()
		buf := make([]byte, 64)
		_, err := io.ReadFull(h, buf[:20])
		require.NoError(t, err)
		read := make(chan error, 1)
		go func() { _, err := h.Read(buf); read <- err }()
		if watched {
			select {
			case err := <-read:
				t.Fatalf("the first read after the handshake returned (%v) before the set-watches request was written", err)
			default:
			}
			go func() { _, _ = io.ReadFull(server, make([]byte, 12*2)) }()
			_, err = h.Write(request(7, 4)) // getData: not it
			require.NoError(t, err)
			select {
			case err := <-read:
				t.Fatalf("the first read returned (%v) after another request", err)
			default:
			}
			_, err = h.Write(request(8, opSetWatches))
			require.NoError(t, err)
		}
		require.NoError(t, <-read)
		require.NoError(t, h.Close())
		_ = server.Close()
	}
}

// connectRequest is a connect request frame asking for session sid.
func connectRequest(sid uint64) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)   // protocol version
	b = binary.BigEndian.AppendUint64(b, 0)      // last zxid seen
	b = binary.BigEndian.AppendUint32(b, 30000)  // timeout
	b = binary.BigEndian.AppendUint64(b, sid)    // session id
	b = binary.BigEndian.AppendUint32(b, 16)     // password length
	return frame(append(b, make([]byte, 16)...)) // password
}

// The connection of a new session (its connect request carries session id 0) is never
// held, whatever the client believes of its watches: go-zookeeper sends no set-watches
// request for it. A session that goes on is held.
func TestGateNeverHoldsNewSession(t *testing.T) {
	for _, sid := range []uint64{0, 0x1234} {
		client, server := net.Pipe()
		h := newHandshakeConn(client, time.Now().Add(time.Minute), time.Minute)
		h.watched = func() bool { return true }
		go func() {
			_, _ = io.ReadFull(server, make([]byte, len(connectRequest(sid))))
			_, _ = server.Write(frame(make([]byte, 16))) // the handshake's reply
			_, _ = server.Write(frame([]byte{1, 2, 3, 4}))
		}()
		_, err := h.Write(connectRequest(sid))
		require.NoError(t, err)
		buf := make([]byte, 64)
		_, err = io.ReadFull(h, buf[:20])
		require.NoError(t, err)
		read := make(chan error, 1)
		go func() { _, err := h.Read(buf); read <- err }()
		if sid == 0 {
			select {
			case err := <-read:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("the first read of a new session was held")
			}
		} else {
			select {
			case err := <-read:
				t.Fatalf("the first read of a session that goes on returned (%v) before the set-watches request", err)
			case <-time.After(50 * time.Millisecond):
			}
			go func() { _, _ = io.ReadFull(server, make([]byte, 12)) }()
			_, err = h.Write(request(8, opSetWatches))
			require.NoError(t, err)
			require.NoError(t, <-read)
		}
		require.NoError(t, h.Close())
		_ = server.Close()
	}
}
