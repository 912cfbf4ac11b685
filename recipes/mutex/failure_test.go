package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestHolderSessionExpires(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/failure/expire"
	ma, mb := newMutex(t, ca, path), newMutex(t, cb, path)
	ctx := testutil.Context(t, 60*time.Second)

	la, err := ma.Acquire(ctx)
	tokenA := testutil.Token(la) // read while A still holds it
	require.NoError(t, err)
	sidA := ca.SessionID()
	bres := goAcquire(ctx, mb)
	testutil.WaitParticipants(t, mb, 2, 15*time.Second)

	proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sidA]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire A's session")

	testutil.WaitClosed(t, la.Done(), 10*time.Second, "A's lease.Done after its session expired")
	var lb *mutex.Lease
	select {
	case r := <-bres:
		require.NoError(t, r.err)
		lb = r.l
	case <-time.After(15 * time.Second):
		t.Fatal("B did not get the lock after A's session expired")
	}
	require.Greater(t, tokenA, int64(0))
	require.Greater(t, testutil.Token(lb), tokenA, "fencing token must increase")

	proxy.Heal()
	err = la.Release(ctx)
	require.ErrorIs(t, err, mutex.ErrLeaseLost)
	st, err := cb.Exists(ctx, lb.Node())
	require.NoError(t, err)
	require.NotNil(t, st, "A's Release deleted B's node")
	require.Equal(t, []string{framework.NodeName(lb.Node())}, testutil.Children(t, srv.ConnectString(), path))

	require.NoError(t, lb.Release(ctx))
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

func TestGhostNodeOnCreate(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString())
	const path = "/failure/ghost"
	m := newMutex(t, c, path)
	ctx := testutil.Context(t, 60*time.Second)

	// The parent exists, so the next create through the proxy is the lock node's.
	require.NoError(t, c.EnsurePath(ctx, path))
	sid := c.SessionID()
	proxy.DropNextCreateReply()
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, sid, c.SessionID(), "the session should survive a dropped connection")

	kids := testutil.Children(t, srv.ConnectString(), path)
	require.Equal(t, []string{framework.NodeName(l.Node())}, kids, "exactly our node, no ghost")
	st, err := c.Exists(ctx, l.Node())
	require.NoError(t, err)
	require.NotNil(t, st)
	require.Equal(t, sid, st.EphemeralOwner)

	require.NoError(t, l.Release(ctx))
	assertNoChildren(t, srv.ConnectString(), path, c)

	l2, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.Len(t, testutil.Children(t, srv.ConnectString(), path), 1)
	require.NoError(t, l2.Release(ctx))
	assertNoChildren(t, srv.ConnectString(), path, c)
}

func TestCancelWhileWaiting(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ca, cb := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/failure/cancel"
	ma, mb := newMutex(t, ca, path), newMutex(t, cb, path)
	ctx := testutil.Context(t, 60*time.Second)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)

	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	lb, err := mb.Acquire(dctx)
	cancel()
	require.Nil(t, lb)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, cb.WaitGuaranteedDeletes(ctx))
	require.Equal(t, []string{framework.NodeName(la.Node())}, testutil.Children(t, srv.ConnectString(), path),
		"B's node must be gone after the deadline")

	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	start = time.Now()
	lb, err = mb.Acquire(cctx)
	require.Nil(t, lb)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), time.Second, "a cancelled context must return promptly")
	require.NoError(t, cb.WaitGuaranteedDeletes(ctx))
	require.Equal(t, []string{framework.NodeName(la.Node())}, testutil.Children(t, srv.ConnectString(), path))

	require.NoError(t, la.Release(ctx))
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

func TestLeaderKilledWhileContended(t *testing.T) {
	leakcheck.Check(t)
	e := zktest.NewEnsemble(t, 3)
	const (
		path       = "/failure/leader"
		nClients   = 3
		perClient  = 3
		iterations = 10
	)
	ctx := testutil.Context(t, 90*time.Second)
	var clients []*framework.Client
	for range nClients {
		clients = append(clients, testutil.ConnectFailFast(t, e.ConnectString()))
	}

	var (
		mu         sync.Mutex
		holders    = map[int]<-chan struct{}{} // worker -> its lease's Done
		violations atomic.Int64
		acquired   atomic.Int64
		lostLeases atomic.Int64
		halfway    = make(chan struct{})
		halfOnce   sync.Once
	)
	worker := func(m *mutex.Mutex, id int) error {
		for i := range iterations {
			var l *mutex.Lease
			for try := 0; ; try++ {
				actx, cancel := context.WithTimeout(ctx, 20*time.Second)
				var err error
				l, err = m.Acquire(actx)
				cancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil || try >= 5 {
					return fmt.Errorf("worker %d, iteration %d, try %d: %w", id, i, try, err)
				}
			}
			mu.Lock()
			if !testutil.IsClosed(l.Done()) {
				for other, done := range holders {
					if !testutil.IsClosed(done) {
						violations.Add(1)
						t.Logf("violation: worker %d got the lock while worker %d holds a live lease", id, other)
					}
				}
			}
			holders[id] = l.Done()
			mu.Unlock()
			select {
			case <-time.After(2 * time.Millisecond):
			case <-l.Done():
			}
			if testutil.IsClosed(l.Done()) {
				lostLeases.Add(1)
			}
			mu.Lock()
			delete(holders, id)
			mu.Unlock()
			if acquired.Add(1) == nClients*perClient*iterations/3 {
				halfOnce.Do(func() { close(halfway) })
			}
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			err := l.Release(rctx)
			cancel()
			if err != nil && !errors.Is(err, mutex.ErrLeaseLost) {
				// The delete is guaranteed: the node goes in the background.
				t.Logf("worker %d, iteration %d: release: %v", id, i, err)
			}
		}
		return nil
	}

	errs := make(chan error, nClients*perClient)
	for ci, c := range clients {
		m := newMutex(t, c, path)
		for g := range perClient {
			go func() { errs <- worker(m, ci*perClient+g) }()
		}
	}

	select {
	case <-halfway:
	case <-time.After(40 * time.Second):
		t.Fatal("the workers did not get halfway")
	}
	killed, err := e.KillLeader()
	require.NoError(t, err)
	t.Logf("killed leader %d after %d acquisitions", killed, acquired.Load())

	for range nClients * perClient {
		select {
		case err := <-errs:
			require.NoError(t, err)
		case <-ctx.Done():
			t.Fatal("workers did not finish")
		}
	}
	require.EqualValues(t, nClients*perClient*iterations, acquired.Load())
	require.Zero(t, violations.Load(), "two holders with live leases at once")
	t.Logf("leases lost (Done) during the critical section: %d", lostLeases.Load())

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = e.WaitLeader(wctx)
	require.NoError(t, err)
	assertNoChildren(t, e.ConnectString(), path, clients...)
}

func TestNodeVanishesWhileWaiting(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ca, cb := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/failure/vanish"
	ma, mb := newMutex(t, ca, path), newMutex(t, cb, path)
	ctx := testutil.Context(t, 60*time.Second)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	bres := goAcquire(ctx, mb)
	parts := testutil.WaitParticipants(t, ma, 2, 15*time.Second)
	require.Equal(t, la.Node(), parts[0])

	conn, err := zktest.Dial(ctx, srv.ConnectString(), 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.Delete(parts[1], -1))

	// While A holds, B must not come back with a lease.
	var early *acquired
	select {
	case r := <-bres:
		early = &r
	case <-time.After(time.Second):
	}
	if early != nil {
		require.Nil(t, early.l, "B acquired while A holds the lock")
		require.ErrorIs(t, early.err, mutex.ErrNodeVanished)
	}
	require.False(t, testutil.IsClosed(la.Done()))
	parts, err = ma.Participants(ctx)
	require.NoError(t, err)
	require.Equal(t, la.Node(), parts[0], "A must still be first")

	require.NoError(t, la.Release(ctx))
	if early == nil {
		select {
		case r := <-bres:
			if r.err != nil {
				require.ErrorIs(t, r.err, mutex.ErrNodeVanished)
			} else {
				require.NoError(t, r.l.Release(ctx))
			}
		case <-time.After(15 * time.Second):
			t.Fatal("B neither got the lock nor failed after A released")
		}
	}
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

func TestSuspendedEndsLeaseStandardPolicy(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString())
	states := testutil.States(c)
	const path = "/failure/suspended-standard"
	m := newMutex(t, c, path)
	ctx := testutil.Context(t, 60*time.Second)

	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	sid := c.SessionID()
	proxy.DropConnections()
	testutil.WaitClosed(t, l.Done(), 10*time.Second, "lease.Done after Suspended (standard policy)")
	testutil.WaitState(t, states, framework.Reconnected, 10*time.Second)
	require.Equal(t, sid, c.SessionID(), "the session should survive")

	// The lease may have been lost: Release says so, but still removes our node.
	require.ErrorIs(t, l.Release(ctx), mutex.ErrLeaseLost)
	st, err := c.Exists(ctx, l.Node())
	require.NoError(t, err)
	require.Nil(t, st, "Release must delete the node our session still owns")
	assertNoChildren(t, srv.ConnectString(), path, c)
}

func TestSuspendedKeepsLeaseSessionPolicy(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithErrorPolicy(framework.SessionErrorPolicy))
	states := testutil.States(c)
	const path = "/failure/suspended-session"
	m := newMutex(t, c, path)
	ctx := testutil.Context(t, 60*time.Second)

	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	sid := c.SessionID()
	proxy.DropConnections()
	testutil.WaitState(t, states, framework.Suspended, 10*time.Second)
	testutil.WaitState(t, states, framework.Reconnected, 10*time.Second)
	require.Equal(t, sid, c.SessionID(), "the session should survive")
	require.False(t, testutil.IsClosed(l.Done()), "Suspended must not end a lease under the session policy")

	require.NoError(t, l.Release(ctx))
	assertNoChildren(t, srv.ConnectString(), path, c)
}

func TestMisuse(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/failure/misuse"

	for _, tc := range []struct {
		name string
		c    *framework.Client
		path string
	}{
		{"nil client", nil, path},
		{"empty component", c, "bad//path"},
		{"relative", c, "bad/path"},
		{"root", c, "/"},
		{"empty", c, ""},
		{"trailing slash", c, "/a/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m *mutex.Mutex
			var err error
			require.NotPanics(t, func() { m, err = mutex.New(tc.c, tc.path) })
			require.Error(t, err)
			require.Nil(t, m)
		})
	}

	m := newMutex(t, c, path)

	// Releasing twice.
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.ErrorIs(t, l.Release(ctx), mutex.ErrNotHeld)

	// Re-entrancy through the lease.
	l, err = m.Acquire(ctx)
	require.NoError(t, err)
	l2, err := l.Reenter()
	require.NoError(t, err)
	require.Len(t, testutil.Children(t, srv.ConnectString(), path), 1, "re-entry must not create a node")
	require.NoError(t, l2.Release(ctx))
	st, err := c.Exists(ctx, l.Node())
	require.NoError(t, err)
	require.NotNil(t, st, "the first of two releases must keep the node")
	require.True(t, m.IsAcquiredInThisProcess())
	require.NoError(t, l.Release(ctx))
	st, err = c.Exists(ctx, l.Node())
	require.NoError(t, err)
	require.Nil(t, st, "the last release must delete the node")
	require.False(t, m.IsAcquiredInThisProcess())
	require.ErrorIs(t, l.Release(ctx), mutex.ErrNotHeld)
	assertNoChildren(t, srv.ConnectString(), path, c)

	// Acquire after the client is closed.
	c2 := testutil.ConnectFailFast(t, srv.ConnectString())
	m2 := newMutex(t, c2, path)
	require.NoError(t, c2.Close())
	l, err = m2.Acquire(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, framework.ErrClosed)
	l, err = m2.TryAcquire(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, framework.ErrClosed)
	assertNoChildren(t, srv.ConnectString(), path, c)
}

// A lease whose Done closed because the connection dropped is released while the client
// is still cut off, with a short deadline; the session survives. The node must not stay
// behind held by a live session (Release's delete is guaranteed), or the lock is stuck.
func TestSuspendedReleaseLeavesNoNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := testutil.ConnectFailFast(t, proxy.ConnectString())
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	states := testutil.States(ca)
	const path = "/failure/release-disconnected"
	ma, mb := newMutex(t, ca, path), newMutex(t, cb, path)
	ctx := testutil.Context(t, 60*time.Second)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	sid := ca.SessionID()

	proxy.Stall()           // new connections go nowhere...
	proxy.DropConnections() // ...and the current one ends now: Suspended at once
	testutil.WaitClosed(t, la.Done(), 10*time.Second, "lease.Done after Suspended")
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = la.Release(rctx)
	cancel()
	require.ErrorIs(t, err, mutex.ErrLeaseLost)
	proxy.Heal()
	testutil.WaitState(t, states, framework.Reconnected, 10*time.Second)
	require.Equal(t, sid, ca.SessionID(), "the session should survive the short cut")

	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	lb, err := mb.Acquire(actx)
	require.NoError(t, err, "the released lease's node still blocks the lock: %v", testutil.Children(t, srv.ConnectString(), path))
	require.NoError(t, lb.Release(ctx))
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

// A release whose delete is held until the lease's session expired, while another client
// makes a node of its own at the lease's path, deletes nothing: the delete sent again on
// the client's new session would find the other's node (the lease's went with its
// session). The release says the lease was lost.
func TestReleaseAfterExpiryLeavesAnotherSessionsNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed atomic.Bool
	stalled := make(chan struct{})
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(2*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "delete" && armed.CompareAndSwap(true, false) {
				proxy.Stall()
				close(stalled)
			}
		}))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/failure/expire-taken"
	ma := newMutex(t, ca, path)
	ctx := testutil.Context(t, 60*time.Second)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	sidA := ca.SessionID()
	armed.Store(true)
	released := make(chan error, 1)
	go func() { released <- la.Release(ctx) }()
	testutil.WaitClosed(t, stalled, 20*time.Second, "the release's delete")
	require.Eventually(t, func() bool {
		ids, err := zktest.Sessions(srv.Addr())
		return err == nil && !slices.Contains(ids, sidA)
	}, 20*time.Second, 20*time.Millisecond, "the server did not expire A's session")
	_, err = cb.Create(ctx, la.Node(), []byte("other's"), framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	st, err := cb.Exists(ctx, la.Node())
	require.NoError(t, err)
	proxy.Heal()

	select {
	case err = <-released:
	case <-time.After(30 * time.Second):
		t.Fatal("the release did not return")
	}
	require.ErrorIs(t, err, mutex.ErrLeaseLost)
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	now, err := cb.Exists(ctx, la.Node())
	require.NoError(t, err)
	require.NotNil(t, now, "the release deleted the node another session made at the lease's path")
	require.Equal(t, st.Czxid, now.Czxid)
	require.NoError(t, cb.Delete(ctx, la.Node()))
}

// connectGated connects a client through gate (in front of a proxy) that reports Lost at
// 10 % of a 60 s session: once the gate bans its session and its connection drops, the
// client ends that session itself (a simulated Lost, whose close never reaches the
// server) and starts a new one at once, while the server keeps the old session, and its
// ephemeral nodes, for up to a minute.
func connectGated(t *testing.T, srv *zktest.Server, gate *testutil.SessionGate) (*framework.Client, <-chan framework.State) {
	t.Helper()
	c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithSimulatedExpiry(0.1), framework.WithConnectionTimeout(2*time.Second),
		framework.WithDialer(gate.Dial), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	states := testutil.States(c)
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntilConnected(ctx))
	testutil.WaitState(t, states, framework.Connected, 10*time.Second)
	return c, states
}

// simulatedLostRelease is the setting of the tests below: a holds the lock on a client
// that then ends its session itself and starts a new one, while the server keeps the old
// session alive (and its lock node, and an ephemeral marker that shows it lives). early
// releases the lease while the client is still cut off (its delete goes to the
// background, before the session changes); else it is released in the new session.
// DeleteNode's doc: a lease lost by the loss signal is still deleted — "after a
// suspension or a simulated expiry the session may have survived and still own it" —
// only as this node (its czxid). The release says the lease was lost either way; the
// node must go while the old session lives, or the lock is stuck for everyone until the
// server expires that session.
func simulatedLostRelease(t *testing.T, path string, early bool) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	gate := testutil.NewSessionGate(proxy.Dialer())
	ca, states := connectGated(t, srv, gate)
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	checker := testutil.ConnectFailFast(t, srv.ConnectString())
	ma, mb := newMutex(t, ca, path), newMutex(t, cb, path)
	ctx := testutil.Context(t, 120*time.Second)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	node := la.Node()
	oldSid := ca.SessionID()
	_, err = ca.Create(ctx, path+"-marker", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	gate.Ban(oldSid)
	proxy.DropConnections()
	testutil.WaitClosed(t, la.Done(), 20*time.Second, "lease.Done once the connection dropped")
	if early {
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err = la.Release(rctx)
		cancel()
		require.ErrorIs(t, err, mutex.ErrLeaseLost)
	}
	testutil.WaitState(t, states, framework.Lost, 30*time.Second)
	testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
	require.NotEqual(t, oldSid, ca.SessionID())
	if !early {
		require.ErrorIs(t, la.Release(ctx), mutex.ErrLeaseLost)
	}

	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	require.NoError(t, ca.WaitGuaranteedDeletes(wctx))
	cancel()
	st, err := checker.Exists(ctx, node)
	require.NoError(t, err)
	mst, err := checker.Exists(ctx, path+"-marker")
	require.NoError(t, err)
	require.NotNil(t, mst, "the old session ended on the server: the test proves nothing")
	require.Equal(t, oldSid, mst.EphemeralOwner)
	if st != nil {
		require.NoError(t, checker.Delete(ctx, node, framework.Quietly()))
		require.NoError(t, checker.Delete(ctx, path+"-marker", framework.Quietly()))
		require.Nil(t, st, "the release left the lease's node %s (of the old session, still alive) holding the lock", node)
	}

	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	lb, err := mb.Acquire(actx)
	require.NoError(t, err, "the released lease's node still blocks the lock: %v", testutil.Children(t, srv.ConnectString(), path))
	require.NoError(t, lb.Release(ctx))
	require.NoError(t, checker.Delete(ctx, path+"-marker", framework.Quietly()))
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

// A release in the client's new session, after a simulated Lost, of a lease whose node
// the old session (alive on the server) still holds deletes that node.
func TestReleaseAfterSimulatedLostDeletesOldSessionNode(t *testing.T) {
	simulatedLostRelease(t, "/failure/simulated-lost-release", false)
}

// A release whose guaranteed delete went to the background while the client was cut off
// deletes the node once the client has a new session (a simulated Lost), while the old
// session, and the node, live on the server.
func TestReleaseQueuedBeforeSimulatedLostDeletesNode(t *testing.T) {
	simulatedLostRelease(t, "/failure/simulated-lost-queued-release", true)
}

// A release whose delete failed with the connection (not retried: the guaranteed delete
// goes on in the background), while another client deletes the lease's node and makes
// its own at the same path, leaves that node: the delete sent again reads the node's
// owner first.
func TestReleaseSentAgainLeavesAnotherClientsNodeAtThePath(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	noRetry, err := retry.NewNTimes(0, 0)
	require.NoError(t, err)
	var armed atomic.Bool
	failed := make(chan struct{})
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second),
		framework.WithRetryPolicy(noRetry),
		framework.WithRequestHook(func(op string) {
			if op == "delete" && armed.CompareAndSwap(true, false) {
				proxy.Refuse()
				proxy.DropConnections()
				close(failed)
			}
		}))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/failure/release-sent-again"
	ma := newMutex(t, ca, path)
	ctx := testutil.Context(t, 60*time.Second)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	node := la.Node()
	armed.Store(true)
	_ = la.Release(ctx) // fails with the connection: its delete goes on in the background
	testutil.WaitClosed(t, failed, 20*time.Second, "the release's delete")
	_, err = cb.Transaction(ctx, framework.DeleteOp(node, -1),
		framework.CreateOp(node, []byte("other's"), framework.Ephemeral, zk.WorldACL(zk.PermAll)))
	require.NoError(t, err)
	st, err := cb.Exists(ctx, node)
	require.NoError(t, err)
	require.NotNil(t, st)
	proxy.Heal()

	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	now, err := cb.Exists(ctx, node)
	require.NoError(t, err)
	require.NotNil(t, now, "the release's delete, sent again, deleted the node another client made at the lease's path")
	require.Equal(t, st.Czxid, now.Czxid)
	require.NoError(t, cb.Delete(ctx, node))
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}
