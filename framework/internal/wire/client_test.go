package wire_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
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

// notices records a Client's notices, in order.
type notices struct {
	mu   sync.Mutex
	all  []wire.Notice
	seen int // notices next has gone past
	sig  chan struct{}
}

func newNotices() *notices { return &notices{sig: make(chan struct{}, 1)} }

func (n *notices) on(x wire.Notice) {
	n.mu.Lock()
	n.all = append(n.all, x)
	n.mu.Unlock()
	select {
	case n.sig <- struct{}{}:
	default:
	}
}

// next returns the first notice after those seen that matches ok, failing the test if
// none comes in time; the notices before it are seen too.
func (n *notices) next(t *testing.T, what string, ok func(wire.Notice) bool) wire.Notice {
	t.Helper()
	timeout := time.After(wait)
	for {
		n.mu.Lock()
		for n.seen < len(n.all) {
			x := n.all[n.seen]
			n.seen++
			if ok(x) {
				n.mu.Unlock()
				return x
			}
		}
		n.mu.Unlock()
		select {
		case <-n.sig:
		case <-timeout:
			t.Fatalf("no notice: %s", what)
			return wire.Notice{}
		}
	}
}

// state waits for the next change of state to s.
func (n *notices) state(t *testing.T, s zk.State) wire.Notice {
	t.Helper()
	return n.next(t, s.String(), func(x wire.Notice) bool { return x.Type == zk.EventSession && x.State == s })
}

// since returns the notices from index i on.
func (n *notices) since(i int) []wire.Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.all[i:])
}

func (n *notices) len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.all)
}

// newClient starts a Client on servers, closed at the test's cleanup, and waits for its
// session.
func newClient(t *testing.T, servers []string, cfg wire.ClientConfig) (*wire.Client, *notices) {
	t.Helper()
	hosts, err := wire.NewHostList(servers)
	require.NoError(t, err)
	ns := newNotices()
	cfg.Hosts, cfg.OnEvent = hosts, ns.on
	c, err := wire.NewClient(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ns.state(t, zk.StateHasSession)
	return c, ns
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", wait, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A session moves to another member when its server dies, with its ephemeral node and
// its watch, which fires once for a change made meanwhile.
func TestClientFailsOverToAnotherMemberWithWatches(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3)
	ctx := testCtx(t)
	leader, err := ens.WaitLeader(ctx)
	require.NoError(t, err)
	var followers []string
	for i := range ens.Size() {
		if i != leader {
			followers = append(followers, ens.Addr(i))
		}
	}
	c, ns := newClient(t, followers, wire.ClientConfig{SessionTimeout: 10 * time.Second})
	sid := c.Session().ID
	_, err = c.Create(ctx, "/w", []byte("0"), openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/e", nil, openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
	_, err = c.GetData(ctx, "/w", true)
	require.NoError(t, err)

	first := c.Server()
	other := dial(t, ens.Addr(leader), wire.Config{})
	require.NoError(t, ens.Kill(slices.Index(strings.Split(ens.ConnectString(), ","), first)))
	ns.state(t, zk.StateDisconnected)
	_, err = other.SetData(ctx, "/w", []byte("1"), -1)
	require.NoError(t, err)

	up := ns.state(t, zk.StateHasSession)
	assert.Equal(t, sid, up.Session)
	assert.False(t, up.NewSession)
	assert.NotEqual(t, first, up.Server)
	ev := ns.next(t, "the watch's event", func(x wire.Notice) bool { return x.Type != zk.EventSession })
	assert.Equal(t, zk.EventNodeDataChanged, ev.Type)
	assert.Equal(t, "/w", ev.Path)
	assert.Equal(t, wire.WatchData, ev.Ended)
	assert.Equal(t, sid, ev.Session)

	eph, err := c.GetEphemerals(ctx, "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"/e"}, eph.Paths)
	// Once: a second change is told to nobody (the watch ended); the read that sees it
	// comes after any event sent before it.
	mark := ns.len()
	_, err = other.SetData(ctx, "/w", []byte("2"), -1)
	require.NoError(t, err)
	_, err = c.Sync(ctx, "/w")
	require.NoError(t, err)
	got, err := c.GetData(ctx, "/w", false)
	require.NoError(t, err)
	assert.Equal(t, []byte("2"), got.Data)
	assert.Empty(t, ns.since(mark))
}

// A dropped connection is followed by the same session on a new one.
func TestClientResumesSessionAfterDroppedConnection(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testCtx(t)
	c, ns := newClient(t, []string{proxy.ConnectString()}, wire.ClientConfig{SessionTimeout: 10 * time.Second})
	sid := c.Session().ID
	_, err := c.Create(ctx, "/e", nil, openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
	proxy.DropConnections()
	down := ns.state(t, zk.StateDisconnected)
	assert.ErrorIs(t, down.Err, wire.ErrConnectionLost)
	up := ns.state(t, zk.StateHasSession)
	assert.Equal(t, sid, up.Session)
	assert.False(t, up.NewSession)
	st, err := c.Exists(ctx, "/e", false)
	require.NoError(t, err)
	assert.Equal(t, sid, st.Stat.EphemeralOwner)
	assert.Equal(t, proxy.ConnectString(), c.Server())
}

// The credentials go with every connection: a node only they may read stays readable
// after a reconnection.
func TestClientResendsAuthAfterReconnection(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testCtx(t)
	auth := []wire.Auth{{Scheme: "digest", Auth: []byte("user:secret")}}
	c, ns := newClient(t, []string{proxy.ConnectString()}, wire.ClientConfig{Auth: auth})
	_, err := c.Create(ctx, "/private", []byte("x"), zk.DigestACL(zk.PermAll, "user", "secret"), wire.ModePersistent, 0)
	require.NoError(t, err)
	stranger := dial(t, srv.Addr(), wire.Config{})
	_, err = stranger.GetData(ctx, "/private", false)
	require.ErrorIs(t, err, zk.ErrNoAuth, "the ACL admits only the digest")

	proxy.DropConnections()
	ns.state(t, zk.StateDisconnected)
	ns.state(t, zk.StateHasSession)
	got, err := c.GetData(ctx, "/private", false)
	require.NoError(t, err)
	assert.Equal(t, []byte("x"), got.Data)
}

// A refused credential ends the Client: no server will take it.
func TestClientAuthRefusedEndsClient(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	hosts, err := wire.NewHostList([]string{srv.Addr()})
	require.NoError(t, err)
	ns := newNotices()
	c, err := wire.NewClient(wire.ClientConfig{Hosts: hosts, OnEvent: ns.on,
		Auth: []wire.Auth{{Scheme: "nosuchscheme", Auth: []byte("x")}}})
	require.NoError(t, err)
	defer c.Close()
	n := ns.state(t, zk.StateAuthFailed)
	assert.ErrorIs(t, n.Err, zk.ErrAuthFailed)
	_, err = c.Exists(testCtx(t), "/", false)
	assert.ErrorIs(t, err, zk.ErrAuthFailed)
}

// Requests made while there is no connection are sent on the next one, in the order
// they were made.
func TestClientSendsRequestsInOrderAcrossReconnection(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testCtx(t)
	c, ns := newClient(t, []string{proxy.ConnectString()}, wire.ClientConfig{SessionTimeout: 20 * time.Second})
	_, err := c.Create(ctx, "/q", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	proxy.Refuse()
	proxy.DropConnections()
	ns.state(t, zk.StateDisconnected)

	const n = 20
	type result struct {
		i    int
		path string
		err  error
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			rep, err := c.Create(ctx, "/q/n-", []byte{byte(i)}, openACL, wire.ModePersistentSequential, 0)
			results <- result{i, rep.Path, err}
		}()
		waitFor(t, "the request waits for a connection", func() bool { return c.Waiting() == i+1 })
	}
	proxy.Heal()
	paths := make([]string, n)
	for range n {
		r := <-results
		require.NoError(t, r.err)
		paths[r.i] = r.path
	}
	assert.True(t, slices.IsSorted(paths), "sequence numbers follow the order of the requests: %v", paths)
}

// A request whose ctx ends while it waits for a connection returns ctx.Err() at once and
// is never sent.
func TestClientRequestEndsWithContextWhileDisconnected(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, ns := newClient(t, []string{proxy.ConnectString()}, wire.ClientConfig{SessionTimeout: 20 * time.Second})
	proxy.Refuse()
	proxy.DropConnections()
	ns.state(t, zk.StateDisconnected)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Create(ctx, "/never", nil, openACL, wire.ModePersistent, 0)
		done <- err
	}()
	waitFor(t, "the request waits", func() bool { return c.Waiting() == 1 })
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(wait):
		t.Fatal("the request did not end with its context")
	}
	assert.Zero(t, c.Waiting())
	proxy.Heal()
	ns.state(t, zk.StateHasSession)
	_, err := c.Exists(testCtx(t), "/never", false)
	assert.ErrorIs(t, err, zk.ErrNoNode, "the request was not sent")
}

// With FailUnsentEachRound, a request made while there is no connection fails with
// ErrNotSent (zk.ErrNoServer) once a round of dials reached no server; it is never
// sent, and the session goes on.
func TestClientRequestUnsentAfterRoundWithoutServer(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, ns := newClient(t, []string{proxy.ConnectString()},
		wire.ClientConfig{SessionTimeout: 20 * time.Second, FailUnsentEachRound: true})
	sess := c.Session()
	proxy.Refuse()
	proxy.DropConnections()
	ns.state(t, zk.StateDisconnected)

	_, err := c.Create(testCtx(t), "/never", nil, openACL, wire.ModePersistent, 0)
	require.ErrorIs(t, err, wire.ErrNotSent)
	assert.ErrorIs(t, err, zk.ErrNoServer)
	assert.Zero(t, c.Waiting())
	proxy.Heal()
	ns.state(t, zk.StateHasSession)
	assert.Equal(t, sess.ID, c.Session().ID, "the session goes on")
	_, err = c.Exists(testCtx(t), "/never", false)
	assert.ErrorIs(t, err, zk.ErrNoNode, "the request was not sent")
}

// A server gone for longer than the session timeout: the Client tells of the expiry
// once no server answered for the whole timeout, ends the watches and fails the
// requests waiting for a connection, then opens a new session once a server is back.
func TestClientExpiresSessionWhenNoServerAnswers(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewLocalServer(t)
	ctx := testCtx(t)
	// Ten seconds: the server's stop, the disconnection and the request below must come
	// before the expiry, also on a loaded machine (a JVM's stop can take seconds there).
	c, ns := newClient(t, []string{srv.Addr()}, wire.ClientConfig{SessionTimeout: 10 * time.Second})
	sess := c.Session()
	_, err := c.Create(ctx, "/w", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	_, err = c.Exists(ctx, "/w", true)
	require.NoError(t, err)
	_, err = c.Exists(ctx, "/missing", true)
	require.ErrorIs(t, err, zk.ErrNoNode, "an exist watch is set all the same")
	beforeLast := time.Now()
	_, err = c.GetChildren(ctx, "/", true) // the last reply before the server goes
	require.NoError(t, err)
	require.NoError(t, srv.Stop())
	ns.state(t, zk.StateDisconnected)

	waiting := make(chan error, 1)
	go func() {
		_, err := c.Create(ctx, "/late", nil, openACL, wire.ModePersistent, 0)
		waiting <- err
	}()
	waitFor(t, "the request waits", func() bool { return c.Waiting() == 1 })
	exp := ns.state(t, zk.StateExpired)
	assert.GreaterOrEqual(t, time.Since(beforeLast), sess.Timeout, "not before the session timeout")
	assert.Equal(t, sess.ID, exp.Session)
	assert.ErrorIs(t, exp.Err, wire.ErrSessionTimedOut)
	assert.ErrorIs(t, exp.Err, zk.ErrSessionExpired)
	var ended []string
	for range 3 {
		n := ns.next(t, "a watch ends", func(x wire.Notice) bool { return x.Type == zk.EventNotWatching })
		ended = append(ended, fmt.Sprintf("%s %d", n.Path, n.Ended))
	}
	assert.Equal(t, []string{
		fmt.Sprintf("/ %d", wire.WatchChild), fmt.Sprintf("/missing %d", wire.WatchExist), fmt.Sprintf("/w %d", wire.WatchData),
	}, ended)
	select {
	case err := <-waiting:
		assert.ErrorIs(t, err, wire.ErrSessionExpired, "not sent in another session")
	case <-time.After(wait):
		t.Fatal("the waiting request did not fail with the expiry")
	}
	ns.state(t, zk.StateConnecting)

	require.NoError(t, srv.Restart(ctx))
	up := ns.state(t, zk.StateHasSession)
	assert.True(t, up.NewSession)
	assert.NotEqual(t, sess.ID, up.Session)
	_, err = c.Exists(ctx, "/late", false)
	assert.ErrorIs(t, err, zk.ErrNoNode)
}

// A session the server expired: the Client learns it when it reconnects, ends the
// watches and opens a new session.
func TestClientReportsServerExpiryAndOpensNewSession(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c, ns := newClient(t, []string{srv.Addr()}, wire.ClientConfig{SessionTimeout: 10 * time.Second})
	sid := c.Session().ID
	_, err := c.Exists(ctx, "/w", true)
	require.ErrorIs(t, err, zk.ErrNoNode)
	require.NoError(t, srv.ExpireSession(ctx, sid))
	exp := ns.state(t, zk.StateExpired)
	assert.Equal(t, sid, exp.Session)
	assert.ErrorIs(t, exp.Err, zk.ErrSessionExpired)
	assert.NotErrorIs(t, exp.Err, wire.ErrSessionTimedOut)
	n := ns.next(t, "the watch ends", func(x wire.Notice) bool { return x.Type == zk.EventNotWatching })
	assert.Equal(t, "/w", n.Path)
	up := ns.state(t, zk.StateHasSession)
	assert.True(t, up.NewSession)
	assert.Equal(t, up.Session, c.Session().ID)
	_, err = c.Exists(ctx, "/", false)
	require.NoError(t, err)
}

// GiveUp ends the session on the client's side and opens another.
func TestClientGiveUpOpensNewSession(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c, ns := newClient(t, []string{srv.Addr()}, wire.ClientConfig{SessionTimeout: 60 * time.Second})
	sid := c.Session().ID
	_, err := c.Create(ctx, "/e", nil, openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
	_, err = c.GetChildren(ctx, "/", true)
	require.NoError(t, err)
	c.GiveUp()
	exp := ns.state(t, zk.StateExpired)
	assert.ErrorIs(t, exp.Err, wire.ErrSessionGivenUp)
	n := ns.next(t, "the watch ends", func(x wire.Notice) bool { return x.Type == zk.EventNotWatching })
	assert.Equal(t, wire.WatchChild, n.Ended)
	up := ns.state(t, zk.StateHasSession)
	assert.True(t, up.NewSession)
	assert.NotEqual(t, sid, up.Session)
	assert.Equal(t, 60*time.Second, up.Timeout)
	// Given up, not closed: the server keeps the old session until its timeout (a
	// minute here, far beyond this check).
	st, err := c.Exists(ctx, "/e", false)
	require.NoError(t, err)
	assert.Equal(t, sid, st.Stat.EphemeralOwner)
}

// A removed watch is told with the event the Java client makes, before RemoveWatches
// returns; a change afterwards is told to nobody.
func TestClientRemoveWatchesTellsRemoval(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c, ns := newClient(t, []string{srv.Addr()}, wire.ClientConfig{})
	_, err := c.Create(ctx, "/n", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	_, err = c.GetData(ctx, "/n", true)
	require.NoError(t, err)
	mark := ns.len()
	_, err = c.RemoveWatches(ctx, "/n", wire.WatcherData)
	require.NoError(t, err)
	got := ns.since(mark)
	require.Len(t, got, 1, "told before RemoveWatches returned")
	assert.Equal(t, wire.EventDataWatchRemoved, got[0].Type)
	assert.Equal(t, wire.WatchData, got[0].Ended)
	_, err = c.SetData(ctx, "/n", []byte("1"), -1)
	require.NoError(t, err)
	_, err = c.GetData(ctx, "/n", false)
	require.NoError(t, err)
	assert.Len(t, ns.since(mark), 1)
	_, err = c.RemoveWatches(ctx, "/n", wire.WatcherData)
	var we *wire.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, wire.CodeNoWatcher, we.Code)
}

// A watch event reaches OnEvent before the reply to a later request, however slow
// OnEvent is.
func TestClientDeliversEventsBeforeLaterReplies(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	release := make(chan struct{})
	var told sync.WaitGroup
	told.Add(1)
	hosts, err := wire.NewHostList([]string{srv.Addr()})
	require.NoError(t, err)
	var once sync.Once
	ns := newNotices()
	c, err := wire.NewClient(wire.ClientConfig{Hosts: hosts, OnEvent: func(n wire.Notice) {
		ns.on(n)
		if n.Type == zk.EventNodeDataChanged {
			once.Do(func() { told.Done(); <-release })
		}
	}})
	require.NoError(t, err)
	defer c.Close()
	ns.state(t, zk.StateHasSession)
	other := dial(t, srv.Addr(), wire.Config{})
	_, err = c.Create(ctx, "/n", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	_, err = c.GetData(ctx, "/n", true)
	require.NoError(t, err)
	_, err = other.SetData(ctx, "/n", []byte("1"), -1)
	require.NoError(t, err)
	told.Wait() // OnEvent holds the event
	read := make(chan error, 1)
	go func() {
		_, err := c.GetData(ctx, "/n", false)
		read <- err
	}()
	select {
	case err := <-read:
		t.Fatalf("the reply came while OnEvent held the event before it (%v)", err)
	case <-time.After(100 * time.Millisecond): // no timing is asserted: a reply would be wrong at any time
	}
	close(release)
	require.NoError(t, <-read)
}

// Close ends the session on the server at once and leaves no goroutine; requests then
// fail with ErrClosed, and the last notice is StateClosed.
func TestClientCloseEndsSession(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c, ns := newClient(t, []string{srv.Addr()}, wire.ClientConfig{SessionTimeout: 30 * time.Second})
	_, err := c.Create(ctx, "/e", nil, openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close may be called again")
	all := ns.since(0)
	assert.Equal(t, wire.StateClosed, all[len(all)-1].State)
	assert.Equal(t, wire.StateClosed, c.State())
	_, err = c.Exists(ctx, "/", false)
	assert.ErrorIs(t, err, wire.ErrClosed)
	other := dial(t, srv.Addr(), wire.Config{})
	_, err = other.Exists(ctx, "/e", false)
	assert.True(t, errors.Is(err, zk.ErrNoNode), "closeSession removed the ephemeral node: %v", err)
}

// A persistent recursive watch is set again on the resumed session: it goes on firing
// for changes below its node after a reconnection.
func TestClientSetsPersistentWatchAgainAfterReconnection(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testCtx(t)
	c, ns := newClient(t, []string{proxy.ConnectString()}, wire.ClientConfig{SessionTimeout: 20 * time.Second})
	_, err := c.Create(ctx, "/r", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	_, err = c.AddWatch(ctx, "/r", wire.AddWatchPersistentRecursive)
	require.NoError(t, err)
	other := dial(t, srv.Addr(), wire.Config{})
	_, err = other.Create(ctx, "/r/a", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	ev := ns.next(t, "the first event", func(x wire.Notice) bool { return x.Type != zk.EventSession })
	assert.Equal(t, "/r/a", ev.Path)
	assert.Zero(t, ev.Ended, "a persistent watch does not end")

	proxy.DropConnections()
	ns.state(t, zk.StateDisconnected)
	ns.state(t, zk.StateHasSession)
	_, err = other.Create(ctx, "/r/b", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	ev = ns.next(t, "an event after the reconnection", func(x wire.Notice) bool { return x.Type != zk.EventSession })
	assert.Equal(t, zk.EventNodeCreated, ev.Type)
	assert.Equal(t, "/r/b", ev.Path)
}

// A one-shot watch whose node changed while the client was disconnected fires once the
// session is resumed (setWatches from the last zxid), after the change of state.
func TestClientWatchFiresForChangeWhileDisconnected(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testCtx(t)
	c, ns := newClient(t, []string{proxy.ConnectString()}, wire.ClientConfig{SessionTimeout: 20 * time.Second})
	_, err := c.Exists(ctx, "/n", true)
	require.ErrorIs(t, err, zk.ErrNoNode)
	proxy.Refuse()
	proxy.DropConnections()
	ns.state(t, zk.StateDisconnected)
	other := dial(t, srv.Addr(), wire.Config{})
	_, err = other.Create(ctx, "/n", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	mark := ns.len()
	proxy.Heal()
	ns.state(t, zk.StateHasSession)
	ev := ns.next(t, "the watch", func(x wire.Notice) bool { return x.Type != zk.EventSession })
	assert.Equal(t, zk.EventNodeCreated, ev.Type)
	assert.Equal(t, wire.WatchExist, ev.Ended)
	got := ns.since(mark)
	assert.Equal(t, zk.StateHasSession, got[0].State, "the change of state comes first")
}

// A request the connection carried when it failed returns ErrConnectionLost, after
// OnEvent was told of the disconnection; it is not sent again.
func TestClientRequestInFlightFailsWithConnectionLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testCtx(t)
	c, ns := newClient(t, []string{proxy.ConnectString()}, wire.ClientConfig{SessionTimeout: 20 * time.Second})
	proxy.HoldReplies()
	sent := proxy.Forwarded()
	done := make(chan error, 1)
	go func() {
		_, err := c.Create(ctx, "/n", nil, openACL, wire.ModePersistent, 0)
		done <- err
	}()
	waitFor(t, "the request reached the server", func() bool { return proxy.Forwarded() > sent })
	proxy.DropConnections()
	var err error
	select {
	case err = <-done:
	case <-time.After(wait):
		t.Fatal("the request did not fail with the connection")
	}
	assert.ErrorIs(t, err, wire.ErrConnectionLost)
	var told bool
	for _, n := range ns.since(0) {
		told = told || n.State == zk.StateDisconnected
	}
	assert.True(t, told, "the disconnection was told before the request returned")
	proxy.Heal()
	ns.state(t, zk.StateHasSession)
	_, err = c.Create(ctx, "/n", nil, openACL, wire.ModePersistent, 0)
	assert.ErrorIs(t, err, zk.ErrNodeExists, "the server applied the first create, once")
}

// Close while there is no connection: the requests waiting for one fail with ErrClosed,
// and Close does not wait for a server.
func TestClientCloseWhileDisconnectedFailsWaitingRequests(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, ns := newClient(t, []string{proxy.ConnectString()}, wire.ClientConfig{SessionTimeout: 20 * time.Second})
	proxy.Refuse()
	proxy.DropConnections()
	ns.state(t, zk.StateDisconnected)
	done := make(chan error, 1)
	go func() {
		_, err := c.Exists(testCtx(t), "/", false)
		done <- err
	}()
	waitFor(t, "the request waits", func() bool { return c.Waiting() == 1 })
	require.NoError(t, c.Close())
	assert.ErrorIs(t, <-done, wire.ErrClosed)
	ns.state(t, wire.StateClosed)
}

// The servers can be replaced while the Client runs: when its connection ends, the
// session goes on through a server of the new list.
func TestClientUpdatedHostListUsedOnReconnection(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	a := zktest.NewProxy(t, srv.ConnectString())
	b := zktest.NewProxy(t, srv.ConnectString())
	hosts, err := wire.NewHostList([]string{a.ConnectString()})
	require.NoError(t, err)
	ns := newNotices()
	c, err := wire.NewClient(wire.ClientConfig{Hosts: hosts, OnEvent: ns.on, SessionTimeout: 20 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	up := ns.state(t, zk.StateHasSession)
	require.NoError(t, hosts.Update([]string{b.ConnectString()}))
	assert.Equal(t, a.ConnectString(), c.Server(), "the connection open is kept")
	a.Refuse()
	a.DropConnections()
	ns.state(t, zk.StateDisconnected)
	again := ns.state(t, zk.StateHasSession)
	assert.Equal(t, b.ConnectString(), again.Server)
	assert.Equal(t, up.Session, again.Session)
}

// TLS is the Dialer's business, on every connection.
func TestClientOverTLSThroughDialer(t *testing.T) {
	leakcheck.Check(t)
	srv, m := zktest.NewTLSServer(t)
	ctx := testCtx(t)
	d := &tls.Dialer{Config: m.ClientConfig()}
	c, _ := newClient(t, []string{srv.SecureConnectString()}, wire.ClientConfig{Dialer: d.DialContext})
	_, err := c.Create(ctx, "/tls", []byte("x"), openACL, wire.ModeEphemeral, 0)
	require.NoError(t, err)
}
