package wire_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework/internal/wire"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// wait bounds every wait of these tests: long, for a loaded machine; a test that works
// never waits for it.
const wait = 30 * time.Second

var openACL = zk.WorldACL(zk.PermAll)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// dial opens a Conn that the test's cleanup closes.
func dial(t *testing.T, addr string, cfg wire.Config) *wire.Conn {
	t.Helper()
	c, err := wire.Dial(testCtx(t), addr, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// events collects a Conn's watch events.
type events struct{ ch chan wire.Event }

func newEvents() *events { return &events{ch: make(chan wire.Event, 1000)} }

func (e *events) on(ev wire.Event) { e.ch <- ev }

// next returns the next event, failing the test if none comes in time.
func (e *events) next(t *testing.T) wire.Event {
	t.Helper()
	select {
	case ev := <-e.ch:
		return ev
	case <-time.After(wait):
		t.Fatal("no event")
		return wire.Event{}
	}
}

// none checks that no event was delivered so far.
func (e *events) none(t *testing.T) {
	t.Helper()
	select {
	case ev := <-e.ch:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}

func TestDialOpensSession(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c := dial(t, srv.Addr(), wire.Config{SessionTimeout: 4 * time.Second})
	s := c.Session()
	assert.NotZero(t, s.ID)
	assert.Len(t, s.Password, 16)
	assert.Equal(t, 4*time.Second, s.Timeout)
	assert.False(t, s.ReadOnly)

	before := c.LastZxid()
	rep, err := c.Create(ctx, "/n", []byte("d"), openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	assert.Equal(t, "/n", rep.Path)
	assert.Greater(t, rep.Zxid, before, "a create's reply carries its zxid")
	assert.Equal(t, rep.Zxid, rep.Stat.Czxid)
	assert.Equal(t, rep.Zxid, c.LastZxid())

	// A read's reply carries the server's last zxid, and a server error its own.
	got, err := c.GetData(ctx, "/n", false)
	require.NoError(t, err)
	assert.Equal(t, []byte("d"), got.Data)
	assert.Equal(t, rep.Zxid, got.Zxid)
	_, err = c.GetData(ctx, "/missing", false)
	assert.ErrorIs(t, err, zk.ErrNoNode)
	var we *wire.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, rep.Zxid, we.Zxid)
}

func TestDialNegotiatesTimeoutWithinServerBounds(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	// zktest's servers allow 400 ms to 120 s.
	c := dial(t, srv.Addr(), wire.Config{SessionTimeout: 100 * time.Millisecond})
	assert.Equal(t, 400*time.Millisecond, c.Session().Timeout)
}

func TestDialResumesSessionOnNewConnection(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c1 := dial(t, srv.Addr(), wire.Config{SessionTimeout: 10 * time.Second})
	made, err := c1.Create(ctx, "/e", nil, openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
	s := c1.Session()
	require.NoError(t, c1.Close())
	assert.ErrorIs(t, c1.Err(), wire.ErrClosed)

	c2 := dial(t, srv.Addr(), wire.Config{Session: s, LastZxid: c1.LastZxid()})
	assert.Equal(t, s.ID, c2.Session().ID)
	assert.Equal(t, 10*time.Second, c2.Session().Timeout)
	st, err := c2.Exists(ctx, "/e", false)
	require.NoError(t, err, "the ephemeral node outlives the connection")
	assert.Equal(t, s.ID, st.Stat.EphemeralOwner)
	assert.Equal(t, made.Stat.Czxid, st.Stat.Czxid)
	eph, err := c2.GetEphemerals(ctx, "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"/e"}, eph.Paths)
}

func TestDialClosedSessionFailsWithSessionExpired(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c1 := dial(t, srv.Addr(), wire.Config{})
	_, err := c1.Create(ctx, "/e", nil, openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
	require.NoError(t, c1.CloseSession(ctx))
	assert.ErrorIs(t, c1.Err(), wire.ErrClosed)
	_, err = c1.Exists(ctx, "/", false)
	assert.ErrorIs(t, err, wire.ErrClosed, "a request after the end fails at once")

	c2 := dial(t, srv.Addr(), wire.Config{})
	_, err = c2.Exists(ctx, "/e", false)
	assert.ErrorIs(t, err, zk.ErrNoNode, "closeSession deletes the session's ephemeral nodes at once")

	_, err = wire.Dial(ctx, srv.Addr(), wire.Config{Session: c1.Session(), LastZxid: c1.LastZxid()})
	assert.ErrorIs(t, err, wire.ErrSessionExpired)
	assert.ErrorIs(t, err, zk.ErrSessionExpired)
}

// A peer that accepts the connection and never answers: the handshake ends with ctx.
func TestDialHandshakeEndsWithContext(t *testing.T) {
	leakcheck.Check(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = wire.Dial(ctx, l.Addr().String(), wire.Config{SessionTimeout: time.Minute})
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	// Cancellation without a deadline, once the connection is accepted.
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := wire.Dial(ctx, l.Addr().String(), wire.Config{SessionTimeout: time.Minute})
		done <- err
	}()
	select {
	case c := <-accepted:
		t.Cleanup(func() { c.Close() })
	case <-time.After(wait):
		t.Fatal("no connection")
	}
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(wait):
		t.Fatal("Dial did not end with its context")
	}
	// A context without deadline: the session timeout bounds the handshake.
	go func() {
		_, err := wire.Dial(context.Background(), l.Addr().String(), wire.Config{SessionTimeout: 500 * time.Millisecond})
		done <- err
	}()
	select {
	case err := <-done:
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout(), "%v", err)
	case <-time.After(wait):
		t.Fatal("Dial without deadline did not give up on a silent server")
	}
}

// Requests from many goroutines share the connection, each getting its own reply.
func TestConnPipelinesRequests(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c := dial(t, srv.Addr(), wire.Config{})
	const n = 200
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := fmt.Sprintf("/n%d", i)
			if _, err := c.Create(ctx, p, []byte(p), openACL, wire.ModePersistent, 0); err != nil {
				errs <- err
				return
			}
			got, err := c.GetData(ctx, p, false)
			if err != nil {
				errs <- err
				return
			}
			if string(got.Data) != p {
				errs <- fmt.Errorf("getData %s returned %q", p, got.Data)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n2, err := c.GetAllChildrenNumber(ctx, "/")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n2.Count, int32(n))
}

// A watch event reaches OnEvent before the reply to a later request of the same Conn:
// once a read shows the new data, the event that announced it has been delivered.
func TestConnDeliversEventsBeforeLaterReplies(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	ev := newEvents()
	c := dial(t, srv.Addr(), wire.Config{OnEvent: ev.on})
	other := dial(t, srv.Addr(), wire.Config{})
	_, err := c.Create(ctx, "/n", []byte("1"), openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	for round := range 20 {
		_, err := c.GetData(ctx, "/n", true)
		require.NoError(t, err)
		set, err := other.SetData(ctx, "/n", []byte{byte(round)}, -1)
		require.NoError(t, err)
		got, err := c.GetData(ctx, "/n", false)
		require.NoError(t, err)
		require.Equal(t, set.Stat.Version, got.Stat.Version)
		select {
		case e := <-ev.ch:
			assert.Equal(t, wire.Event{Type: zk.EventNodeDataChanged, State: zk.StateSyncConnected, Path: "/n", Zxid: e.Zxid}, e)
			// ZooKeeper 3.8 sends -1 as a notification's zxid; later servers may send the
			// change's.
			assert.Contains(t, []int64{-1, set.Zxid}, e.Zxid)
		default:
			t.Fatalf("round %d: the reply showing version %d came before the event", round, got.Stat.Version)
		}
	}
}

// An idle Conn pings the server, so its session outlives several session timeouts.
func TestConnPingsKeepIdleSessionAlive(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	// Three seconds: a ping is due after one, the read timeout after two; a loaded
	// server still answers a ping within the second between them.
	c := dial(t, srv.Addr(), wire.Config{SessionTimeout: 3 * time.Second})
	_, err := c.Create(ctx, "/e", nil, openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
	select {
	case <-c.Done():
		t.Fatalf("idle connection ended: %v", c.Err())
	case <-time.After(2 * c.Session().Timeout):
	}
	other := dial(t, srv.Addr(), wire.Config{})
	st, err := other.Exists(ctx, "/e", false)
	require.NoError(t, err, "the session lived on")
	assert.Equal(t, c.Session().ID, st.Stat.EphemeralOwner)
}

// A server that stops answering ends the Conn after the read timeout (two thirds of the
// session timeout), failing the request that awaited its reply.
func TestConnReadTimeoutEndsConnection(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testCtx(t)
	beforeDial := time.Now() // the last frame the Conn reads comes after it
	c := dial(t, proxy.ConnectString(), wire.Config{SessionTimeout: 3 * time.Second})
	proxy.Stall()
	t.Cleanup(proxy.Heal)
	_, err := c.Exists(ctx, "/", false)
	assert.ErrorIs(t, err, wire.ErrConnectionLost)
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.GreaterOrEqual(t, time.Since(beforeDial), c.Session().Timeout*2/3, "not before the read timeout")
	<-c.Done()
	assert.ErrorIs(t, c.Err(), wire.ErrConnectionLost)
}

// A session whose connection is cut until the server expires it cannot be resumed.
func TestDialAfterExpiryFailsWithSessionExpired(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testCtx(t)
	c := dial(t, proxy.ConnectString(), wire.Config{SessionTimeout: 2 * time.Second})
	_, err := c.Create(ctx, "/e", nil, openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
	proxy.Stall()
	t.Cleanup(proxy.Heal)
	other := dial(t, srv.Addr(), wire.Config{})
	waitGone(t, other, "/e") // the server expired the session
	proxy.Heal()
	proxy.DropConnections()
	_, err = wire.Dial(ctx, proxy.ConnectString(), wire.Config{Session: c.Session(), LastZxid: c.LastZxid()})
	assert.ErrorIs(t, err, wire.ErrSessionExpired)
}

// waitGone polls until path does not exist.
func waitGone(t *testing.T, c *wire.Conn, path string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		_, err := c.Exists(testCtx(t), path, false)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		require.NoError(t, err)
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists after %v", path, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Close fails the requests that await their replies with ErrClosed, and leaves the
// session to its timeout.
func TestConnCloseFailsPendingRequests(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testCtx(t)
	c := dial(t, proxy.ConnectString(), wire.Config{SessionTimeout: 20 * time.Second})
	proxy.HoldReplies()
	t.Cleanup(proxy.Heal)
	sent := proxy.Forwarded()
	done := make(chan error, 1)
	go func() {
		_, err := c.Exists(ctx, "/", false)
		done <- err
	}()
	deadline := time.Now().Add(wait)
	for proxy.Forwarded() == sent { // the request reached the server
		require.True(t, time.Now().Before(deadline), "the request was not sent")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, wire.ErrClosed)
		assert.ErrorIs(t, err, zk.ErrClosing)
	case <-time.After(wait):
		t.Fatal("the pending request did not end with Close")
	}
	require.NoError(t, c.Close(), "Close may be called again")
}

// A request whose context ends returns ctx.Err(); the Conn goes on.
func TestConnRequestEndsWithContext(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := dial(t, proxy.ConnectString(), wire.Config{SessionTimeout: 20 * time.Second})
	proxy.HoldReplies()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Exists(ctx, "/", false)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(wait):
		t.Fatal("the request did not end with its context")
	}
	proxy.Heal()
	_, err := c.Exists(testCtx(t), "/", false)
	require.NoError(t, err, "the late reply of the abandoned request is matched and dropped")
}

// TLS is the Dialer's business: one that wraps the TCP connection reaches a secure port.
func TestDialOverTLSThroughDialer(t *testing.T) {
	leakcheck.Check(t)
	srv, m := zktest.NewTLSServer(t)
	ctx := testCtx(t)
	d := &tls.Dialer{Config: m.ClientConfig()}
	c := dial(t, srv.SecureConnectString(), wire.Config{Dialer: d.DialContext})
	_, err := c.Create(ctx, "/tls", []byte("x"), openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
	who, err := c.WhoAmI(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, who.Clients)
	require.NoError(t, c.CloseSession(ctx))
}

// A server that has not seen the client's last zxid refuses the session, so that the
// client's view never goes back in time; that is no expiry.
func TestDialRefusedByServerBehindLastZxid(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c := dial(t, srv.Addr(), wire.Config{})
	_, err := wire.Dial(ctx, srv.Addr(), wire.Config{Session: c.Session(), LastZxid: c.LastZxid() + 1<<32})
	require.Error(t, err)
	assert.NotErrorIs(t, err, wire.ErrSessionExpired)
	_, err = c.Exists(ctx, "/", false)
	require.NoError(t, err, "the session lives on")
}

// A session moves to another member of an ensemble with its ephemeral nodes.
func TestDialResumesSessionOnAnotherMember(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3)
	addrs := strings.Split(ens.ConnectString(), ",")
	ctx := testCtx(t)
	c1 := dial(t, addrs[0], wire.Config{SessionTimeout: 10 * time.Second})
	_, err := c1.Create(ctx, "/e", nil, openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
	s, last := c1.Session(), c1.LastZxid()
	require.NoError(t, c1.Close())

	// A sync through the other member makes it apply the create first; without it that
	// member may still be behind the client's last zxid and refuse it.
	other := dial(t, addrs[1], wire.Config{})
	_, err = other.Sync(ctx, "/")
	require.NoError(t, err)

	c2 := dial(t, addrs[1], wire.Config{Session: s, LastZxid: last})
	assert.Equal(t, s.ID, c2.Session().ID)
	eph, err := c2.GetEphemerals(ctx, "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"/e"}, eph.Paths)
	require.NoError(t, c2.CloseSession(ctx))
	_, err = other.Sync(ctx, "/")
	require.NoError(t, err)
	_, err = other.Exists(ctx, "/e", false)
	assert.ErrorIs(t, err, zk.ErrNoNode)
}

// Close while goroutines send requests: each ends with its reply or ErrClosed.
func TestConnCloseDuringRequests(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c, err := wire.Dial(ctx, srv.Addr(), wire.Config{})
	require.NoError(t, err)
	const workers = 8
	errs := make(chan error, workers)
	started := make(chan struct{}, workers)
	for range workers {
		go func() {
			for i := 0; ; i++ {
				if _, err := c.Exists(ctx, "/", false); err != nil {
					errs <- err
					return
				}
				if i == 10 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range workers {
		select {
		case <-started:
		case <-time.After(wait):
			t.Fatal("requests did not run")
		}
	}
	require.NoError(t, c.Close())
	for range workers {
		select {
		case err := <-errs:
			assert.ErrorIs(t, err, wire.ErrClosed)
		case <-time.After(wait):
			t.Fatal("a request did not end with Close")
		}
	}
}

// Watches beyond one setWatches request's 128 KB are set in several.
func TestDialSetsManyWatches(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	var paths []string
	for i := range 2000 {
		paths = append(paths, fmt.Sprintf("/w%0100d", i)) // 2000 × 102 bytes: two batches
	}
	ev := newEvents()
	c := dial(t, srv.Addr(), wire.Config{OnEvent: ev.on, Watches: wire.Watches{Exist: paths}})
	other := dial(t, srv.Addr(), wire.Config{})
	for _, p := range []string{paths[0], paths[len(paths)-1]} {
		_, err := other.Create(ctx, p, nil, openACL, wire.ModePersistent, 0)
		require.NoError(t, err)
		e := ev.next(t)
		assert.Equal(t, wire.Event{Type: zk.EventNodeCreated, State: zk.StateSyncConnected, Path: p, Zxid: e.Zxid}, e)
	}
	_, err := c.CheckWatches(ctx, paths[1000], wire.WatcherData)
	require.NoError(t, err)
}
