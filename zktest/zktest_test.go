package zktest_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// connect opens a go-zookeeper client that reports its events on a channel the test reads.
func connect(t *testing.T, connect string, timeout time.Duration, dialer zk.Dialer) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	events := make(chan zk.Event, 1000)
	if dialer == nil {
		dialer = net.DialTimeout
	}
	conn, _, err := zk.Connect(strings.Split(connect, ","), timeout, zk.WithLogger(nopLogger{}), zk.WithDialer(dialer),
		zk.WithEventCallback(func(ev zk.Event) {
			select {
			case events <- ev:
			default:
			}
		}))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	waitState(t, events, zk.StateHasSession, 30*time.Second)
	return conn, events
}

func waitState(t *testing.T, events <-chan zk.Event, want zk.State, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == want {
				return
			}
		case <-timer.C:
			t.Fatalf("no %v within %v", want, d)
		}
	}
}

func TestServerStartsAndAnswers(t *testing.T) {
	s := zktest.NewServer(t)
	out, err := zktest.FourLetterWord(s.Addr(), "ruok", time.Second)
	require.NoError(t, err)
	assert.Equal(t, "imok", out)
	mode, err := zktest.Mode(s.Addr())
	require.NoError(t, err)
	assert.Equal(t, "standalone", mode)

	conn, _ := connect(t, s.ConnectString(), 10*time.Second, nil)
	_, err = conn.Create("/zktest-eph", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	n, err := zktest.MntrInt(s.Addr(), "zk_ephemerals_count")
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
	owners, err := zktest.EphemeralOwners(s.Addr())
	require.NoError(t, err)
	assert.Equal(t, []string{"/zktest-eph"}, owners[conn.SessionID()])
	sessions, err := zktest.Sessions(s.Addr())
	require.NoError(t, err)
	assert.Contains(t, sessions, conn.SessionID())

	kids, err := zktest.Children(context.Background(), s.ConnectString(), "/")
	require.NoError(t, err)
	assert.Contains(t, kids, "zktest-eph")

	// Stop and restart keep the data.
	_, err = conn.Create("/zktest-persistent", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	require.NoError(t, s.Stop())
	_, err = zktest.FourLetterWord(s.Addr(), "ruok", 200*time.Millisecond)
	assert.Error(t, err, "a stopped server must not answer")
	require.NoError(t, s.Restart(context.Background()))
	kids, err = zktest.Children(context.Background(), s.ConnectString(), "/")
	require.NoError(t, err)
	assert.Contains(t, kids, "zktest-persistent")

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	assert.ErrorIs(t, s.Restart(context.Background()), zktest.ErrClosed)
}

func TestEnsembleLeaderKilledSessionSurvives(t *testing.T) {
	e := zktest.NewEnsemble(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader, err := e.WaitLeader(ctx)
	require.NoError(t, err)

	conn, events := connect(t, e.ConnectString(), 10*time.Second, nil)
	sid := conn.SessionID()
	_, err = conn.Create("/survivor", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	killed, err := e.KillLeader()
	require.NoError(t, err)
	assert.Equal(t, leader, killed)
	newLeader, err := e.WaitLeader(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, leader, newLeader, "a new leader is elected among the survivors")

	// The client's session survives the failover: its ephemeral node stays and it can write.
	require.Eventually(t, func() bool {
		_, err := conn.Create("/after-failover", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil
	}, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, sid, conn.SessionID())
	ok, _, err := conn.Exists("/survivor")
	require.NoError(t, err)
	assert.True(t, ok)
	for len(events) > 0 {
		ev := <-events
		assert.NotEqual(t, zk.StateExpired, ev.State)
	}

	// Quorum lost and restored.
	stopped, err := e.StopQuorum()
	require.NoError(t, err)
	assert.Len(t, stopped, 2)
	_, err = e.Leader()
	assert.Error(t, err)
	require.NoError(t, e.RestoreQuorum(ctx))
	_, err = e.WaitLeader(ctx)
	require.NoError(t, err)
}

func TestProxyStallExpiresSession(t *testing.T) {
	s := zktest.NewServer(t)
	p := zktest.NewProxy(t, s.ConnectString())
	conn, events := connect(t, s.ConnectString(), time.Second, p.Dialer())
	sid := conn.SessionID()
	_, err := conn.Create("/doomed", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	p.Stall()
	waitState(t, events, zk.StateDisconnected, 10*time.Second)
	// The server expires the session while the client hears nothing.
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(s.Addr())
		return err == nil && len(owners[sid]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server must expire the cut-off session")
	p.Heal()
	waitState(t, events, zk.StateExpired, 20*time.Second)
	waitState(t, events, zk.StateHasSession, 20*time.Second)
	assert.NotEqual(t, sid, conn.SessionID(), "go-zookeeper opens a new session after expiry")
	ok, _, err := conn.Exists("/doomed")
	require.NoError(t, err)
	assert.False(t, ok, "the expired session's ephemeral node is gone")
}

func TestProxyShortStallKeepsSession(t *testing.T) {
	s := zktest.NewServer(t)
	p := zktest.NewProxy(t, s.ConnectString())
	conn, _ := connect(t, p.ConnectString(), 4*time.Second, nil)
	sid := conn.SessionID()
	p.StallFor(300 * time.Millisecond)
	_, err := conn.Create("/through-stall", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err, "a request sent during a short stall is answered after it")
	assert.Equal(t, sid, conn.SessionID())
}

func TestProxyDropConnections(t *testing.T) {
	s := zktest.NewServer(t)
	p := zktest.NewProxy(t, s.ConnectString())
	conn, events := connect(t, p.ConnectString(), 4*time.Second, nil)
	sid := conn.SessionID()
	p.DropConnections()
	waitState(t, events, zk.StateDisconnected, 5*time.Second)
	waitState(t, events, zk.StateHasSession, 10*time.Second)
	assert.Equal(t, sid, conn.SessionID(), "a dropped connection keeps its session")
}

func TestProxyGhostCreate(t *testing.T) {
	s := zktest.NewServer(t)
	p := zktest.NewProxy(t, s.ConnectString())
	conn, _ := connect(t, p.ConnectString(), 4*time.Second, nil)
	p.DropNextCreateReply()
	_, err := conn.Create("/ghost", []byte("boo"), 0, zk.WorldACL(zk.PermAll))
	require.Error(t, err)
	assert.True(t, errors.Is(err, zk.ErrConnectionClosed), "got %v", err)
	kids, err := zktest.Children(context.Background(), s.ConnectString(), "/")
	require.NoError(t, err)
	assert.Contains(t, kids, "ghost", "the create was applied although its reply was lost")
	// The next create goes through normally.
	require.Eventually(t, func() bool {
		_, err := conn.Create("/after-ghost", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
}

// Pause has taken effect when it returns: the very next request goes unanswered.
func TestPauseResume(t *testing.T) {
	s := zktest.NewLocalServer(t)
	for i := 0; i < 10; i++ {
		require.NoError(t, s.Pause())
		_, err := zktest.FourLetterWord(s.Addr(), "ruok", 300*time.Millisecond)
		require.Error(t, err, "a paused server answers nothing (round %d)", i)
		require.NoError(t, s.Resume())
		out, err := zktest.FourLetterWord(s.Addr(), "ruok", 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, "imok", out)
	}
}

func TestLocalServerIsControllable(t *testing.T) {
	s := zktest.NewLocalServer(t)
	assert.True(t, s.Controllable())
	require.NoError(t, s.Stop())
	require.NoError(t, s.Restart(context.Background()))
}

// The proxy's dialer must route a client that was given a host name, which go-zookeeper
// resolves before it dials, through the proxy: the stall reaches the client.
func TestProxyDialerHostNameTarget(t *testing.T) {
	s := zktest.NewServer(t)
	_, port, err := net.SplitHostPort(s.Addr())
	require.NoError(t, err)
	named := net.JoinHostPort("localhost", port)
	p := zktest.NewProxy(t, named)
	_, events := connect(t, named, 2*time.Second, p.Dialer())
	p.Stall()
	waitState(t, events, zk.StateDisconnected, 20*time.Second)
	p.Heal()
	waitState(t, events, zk.StateHasSession, 20*time.Second)
}

// An address the proxy does not front is not dialled behind the test's back.
func TestProxyDialerUnknownAddressFails(t *testing.T) {
	s := zktest.NewServer(t)
	p := zktest.NewProxy(t, s.ConnectString())
	conn, err := p.Dialer()("tcp", "127.0.0.1:1", time.Second)
	if conn != nil {
		conn.Close()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not front")
}

// Refuse is a dead host: new connections are refused (through the dialer) or reset (at
// the proxy's address), open ones carry on, and Heal lets clients back in.
func TestProxyRefuse(t *testing.T) {
	s := zktest.NewServer(t)
	p := zktest.NewProxy(t, s.ConnectString())
	dialErrs := make(chan error, 100)
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := p.Dialer()(network, address, timeout)
		if err != nil {
			select {
			case dialErrs <- err:
			default:
			}
		}
		return c, err
	}
	conn, events := connect(t, s.ConnectString(), 10*time.Second, dial)
	sid := conn.SessionID()
	accepted := p.Accepted()
	assert.Positive(t, accepted)

	p.Refuse()
	_, err := conn.Create("/open-link", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err, "a connection opened before Refuse carries on")

	// The kernel completes the handshake and the proxy then resets the connection: the
	// reset is seen by the first read, or already by the dial when it comes that fast.
	raw, err := net.DialTimeout("tcp", p.ConnectString(), 10*time.Second)
	if err == nil {
		require.NoError(t, raw.SetReadDeadline(time.Now().Add(20*time.Second)))
		_, err = raw.Read(make([]byte, 1))
		raw.Close()
	}
	require.Error(t, err)
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection must be closed, not left hanging: %v", err)

	p.DropConnections()
	waitState(t, events, zk.StateDisconnected, 10*time.Second)
	select {
	case err := <-dialErrs:
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	case <-time.After(20 * time.Second):
		t.Fatal("the client never tried to reconnect")
	}

	assert.Equal(t, accepted, p.Accepted(), "refused connections are not counted")

	p.Heal()
	waitState(t, events, zk.StateHasSession, 20*time.Second)
	assert.Equal(t, sid, conn.SessionID(), "the session outlived a short refusal")
	assert.Greater(t, p.Accepted(), accepted)
}

func TestProxyHoldRepliesAppliesRequests(t *testing.T) {
	s := zktest.NewServer(t)
	p := zktest.NewProxy(t, s.ConnectString())
	// A long session: go-zookeeper closes a connection silent for 2/3 of it.
	conn, _ := connect(t, p.ConnectString(), 30*time.Second, nil)
	before := p.Forwarded()
	p.HoldReplies()
	done := make(chan error, 1)
	go func() {
		_, err := conn.Create("/held-reply", nil, 0, zk.WorldACL(zk.PermAll))
		done <- err
	}()
	require.Eventually(t, func() bool { return p.Forwarded() > before }, 20*time.Second, 10*time.Millisecond,
		"the request must reach the server")
	// The server applied it although the client has no answer yet.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kids, err := zktest.Children(ctx, s.ConnectString(), "/")
	require.NoError(t, err)
	assert.Contains(t, kids, "held-reply")
	select {
	case err := <-done:
		require.Error(t, err, "the create succeeded while its reply was held")
		return
	default:
	}
	p.Heal()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the held reply never came after Heal")
	}
}
