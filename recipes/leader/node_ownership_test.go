package leader_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// Selector.Close while the selector's lock node is being created (the create applied by
// the server, its reply held) must not return with the node still there: Close's doc says
// it waits "for the node to be deleted". The Latch waits so; the Selector takes its node
// through mutex.Acquire, whose create is given up when Close cancels the run context,
// and Close must still wait for that node to go.
func TestSelectorCloseDuringAcquireLeavesNothing(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/leader/ownership-selector-close-during-acquire"
	_, err := c.Create(ctx, path, nil, framework.WithParents()) // so that the next create is the lock node's
	require.NoError(t, err)

	s, err := leader.NewSelector(c, path, "a", func(ctx context.Context) error { <-ctx.Done(); return nil })
	require.NoError(t, err)
	proxy.HoldReplies()
	require.NoError(t, s.Start(context.Background()))
	require.Eventually(t, func() bool {
		return len(testutil.Children(t, srv.ConnectString(), path)) == 1
	}, 20*time.Second, 10*time.Millisecond, "the selector's create did not reach the server")

	closed := testutil.Go(ctx, func(context.Context) error { return s.Close() })
	var closeErr error
	returned := false
	select {
	case closeErr = <-closed:
		returned = true
	case <-time.After(time.Second): // Close waits for the create: let its reply through
	}
	if returned {
		left := testutil.Children(t, srv.ConnectString(), path)
		proxy.Heal()
		require.Empty(t, left, "Close returned (%v) while the selector's lock node (create applied, reply held) is still there", closeErr)
	} else {
		proxy.Heal()
		closeErr = testutil.Result(t, closed, 30*time.Second, "Close")
		require.Empty(t, testutil.Children(t, srv.ConnectString(), path), "Close returned with the selector's lock node still there")
	}
	require.NoError(t, closeErr)
	assertNoChildren(t, srv.ConnectString(), path, c)
}

// Close's doc: a create of the latch node in flight ("a Start, or the latch making its
// node again") is waited for up to 10 s; "past that bound the create is given up, a node it
// made is deleted in the background once its answer comes, and Close says so in its
// error". For Start it does (TestLatchCloseDuringStartIsBounded); for the election loop's
// own re-create, with the reply held for good, Close returns nil while the node it made
// is still there.
func TestLatchCloseDuringRecreateIsBoundedAndSaysSo(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var (
		mu    sync.Mutex
		armed bool
	)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(40*time.Second),
		framework.WithRequestHook(func(op string) {
			mu.Lock()
			defer mu.Unlock()
			if armed && op == "create" {
				armed = false
				proxy.HoldReplies() // before the create goes out
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/leader/ownership-close-during-recreate-bounded"
	l := startLatch(t, c, path, "a")
	await(t, l, 20*time.Second, "a leads")
	first := l.Node()
	require.NotEmpty(t, first)

	mu.Lock()
	armed = true
	mu.Unlock()
	require.NoError(t, other.Delete(ctx, first, framework.WithVersion(-1)))
	require.Eventually(t, func() bool {
		kids := testutil.Children(t, srv.ConnectString(), path)
		return len(kids) == 1 && kids[0] != framework.NodeName(first)
	}, 20*time.Second, 10*time.Millisecond, "the latch did not make its node again")

	begin := time.Now()
	closeErr := testutil.Result(t, testutil.Go(ctx, func(context.Context) error { return l.Close() }), 30*time.Second, "Close")
	took := time.Since(begin)
	left := testutil.Children(t, srv.ConnectString(), path)
	proxy.Heal()
	if len(left) == 0 {
		return // nothing left: no error needed
	}
	require.Errorf(t, closeErr, "Close returned nil after %v while the latch node it made again (reply held) is still there: %v", took.Round(100*time.Millisecond), left)
	require.Contains(t, closeErr.Error(), "did not resolve")
}

// A Start that fails "leaves nothing behind". Start's create is applied (reply held),
// Start's context ends, and then the connection drops (the reply is lost for good; the
// session lives on). The latch node made by the given-up create is this session's and
// first in line: unless someone deletes it, no other participant ever leads.
func TestLatchStartGivenUpLeavesNoGhostLeader(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/leader/ownership-start-given-up"
	_, err := c.Create(ctx, path, nil, framework.WithParents()) // so that the next create is the latch node's
	require.NoError(t, err)

	a, err := leader.NewLatch(c, path, "a")
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	proxy.HoldReplies()
	started := testutil.Go(startCtx, a.Start)
	require.Eventually(t, func() bool {
		return len(testutil.Children(t, srv.ConnectString(), path)) == 1
	}, 20*time.Second, 10*time.Millisecond, "Start's create did not reach the server")
	cancelStart()
	startErr := testutil.Result(t, started, 20*time.Second, "Start")
	require.Error(t, startErr, "Start's context ended before its create was answered")
	proxy.DropConnections() // the create's reply is lost for good; the session lives on
	proxy.Heal()
	require.NoError(t, c.BlockUntilConnected(ctx))

	b := startLatch(t, other, path, "b")
	bctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := b.Await(bctx); err != nil {
		ps, _ := b.Participants(ctx)
		t.Fatalf("b never leads (%v): Start of a failed (%v) and left its latch node first in line: %+v", err, startErr, ps)
	}
}

// Every blocking call honours its context, clean-ups included. Close comes while Start's
// create is in flight; the create's answer comes, and Start deletes the node it made (as
// Close's doc says). That delete goes out on a stalled connection (a hung server), and
// Start's context ends right then: Start must return promptly (Close may wait on; the
// node is deleted in the background, as a guaranteed delete is). Start waits instead for
// its delete on a context detached from its own (cleanupTimeout, 10 s).
func TestLatchStartCleanupHonoursContext(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	var (
		mu       sync.Mutex
		armed    bool
		canceled time.Time
	)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
		framework.WithRequestHook(func(op string) {
			mu.Lock()
			defer mu.Unlock()
			if armed && op == "delete" {
				armed = false
				proxy.Stall() // before the delete goes out
				canceled = time.Now()
				cancelStart()
			}
		}))
	const path = "/leader/ownership-start-cleanup-ctx"
	_, err := c.Create(ctx, path, nil, framework.WithParents())
	require.NoError(t, err)

	l, err := leader.NewLatch(c, path, "a")
	require.NoError(t, err)
	proxy.HoldReplies()
	started := testutil.Go(startCtx, l.Start)
	require.Eventually(t, func() bool {
		return len(testutil.Children(t, srv.ConnectString(), path)) == 1
	}, 20*time.Second, 10*time.Millisecond, "Start's create did not reach the server")
	closed := testutil.Go(ctx, func(context.Context) error { return l.Close() })
	testutil.NotYet(t, closed, 300*time.Millisecond, "Close (it waits for Start's create)")
	mu.Lock()
	armed = true
	mu.Unlock()
	proxy.Heal() // the create's reply comes: Start deletes the node it made
	startErr := testutil.Result(t, started, 30*time.Second, "Start")
	mu.Lock()
	at := canceled
	mu.Unlock()
	late := time.Since(at)
	proxy.Heal()
	require.False(t, at.IsZero(), "Start sent no delete (returned %v)", startErr)
	require.ErrorIs(t, startErr, leader.ErrClosed)
	require.Lessf(t, late, 2*time.Second, "Start returned %v after its context ended (err: %v)", late.Round(100*time.Millisecond), startErr)
	testutil.Result(t, closed, 30*time.Second, "Close")
	assertNoChildren(t, srv.ConnectString(), path, c)
}

// Leadership is never held by two at once. Selector a leads (its function runs until its
// context ends); its lock node is deleted by someone else (an operator, a tool), so b, next
// in line, takes the lock and its function runs. a's leadership is lost for certain: its
// function's context must be cancelled ("when leadership may be lost"; a latch ends its
// term when its node goes). It stays live: two functions lead at once, for good.
func TestSelectorNodeDeletedEndsLeadership(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ca, cb := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/leader/ownership-selector-node-deleted"

	aCtx := make(chan context.Context, 1)
	startSelector(t, ca, path, "a", func(ctx context.Context) error {
		aCtx <- ctx
		<-ctx.Done()
		return nil
	})
	var actx context.Context
	select {
	case actx = <-aCtx:
	case <-time.After(20 * time.Second):
		t.Fatal("a did not lead")
	}
	bLeads := make(chan struct{}, 1)
	b := startSelector(t, cb, path, "b", func(ctx context.Context) error {
		bLeads <- struct{}{}
		<-ctx.Done()
		return nil
	})
	testutil.WaitParticipants[leader.Participant](t, b, 2, 20*time.Second)
	ps, err := b.Participants(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", ps[0].ID)
	require.NoError(t, admin.Delete(ctx, ps[0].Node, framework.WithVersion(-1)))
	select {
	case <-bLeads:
	case <-time.After(20 * time.Second):
		t.Fatal("b did not lead after a's node was deleted")
	}
	require.Eventually(t, func() bool { return actx.Err() != nil }, 10*time.Second, 10*time.Millisecond,
		"b leads (its function runs) while a's function still has a live context: a's lock node was deleted, yet a still leads")
}

// Two instances on one client (one session) and one path: ownership is per instance.
// Closing the leading latch (selector) deletes its own node only; the other leads next
// and keeps its node until its own Close.
func TestTwoInstancesOnOneClientOwnTheirNodes(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	const lpath, spath = "/leader/ownership-two-latches", "/leader/ownership-two-selectors"

	l1 := startLatch(t, c, lpath, "x")
	await(t, l1, 20*time.Second, "l1 leads")
	l2 := startLatch(t, c, lpath, "x")
	n2 := l2.Node()
	require.NotEmpty(t, n2)
	require.NoError(t, l1.Close())
	await(t, l2, 20*time.Second, "l2 leads after l1's Close")
	require.Equal(t, []string{framework.NodeName(n2)}, testutil.Children(t, srv.ConnectString(), lpath), "l1's Close deleted its own node only")
	require.NoError(t, l2.Close())
	assertNoChildren(t, srv.ConnectString(), lpath, c)

	led := make(chan string, 4)
	fn := func(id string) func(context.Context) error {
		return func(ctx context.Context) error { led <- id; <-ctx.Done(); return nil }
	}
	s1 := startSelector(t, c, spath, "x", fn("s1"))
	require.Equal(t, "s1", <-led)
	s2 := startSelector(t, c, spath, "x", fn("s2"))
	testutil.WaitParticipants[leader.Participant](t, s2, 2, 20*time.Second)
	require.False(t, s2.HasLeadership())
	require.NoError(t, s1.Close())
	select {
	case id := <-led:
		require.Equal(t, "s2", id)
	case <-time.After(20 * time.Second):
		t.Fatal("s2 did not lead after s1's Close")
	}
	require.Len(t, testutil.Children(t, srv.ConnectString(), spath), 1, "s1's Close deleted its own node only")
	require.NoError(t, s2.Close())
	assertNoChildren(t, srv.ConnectString(), spath, c)
}

// Close while Start's create is applied and its reply held waits for Start
// so that no node Start made remains, or says in its error that one may. When Start's own
// context ends during that wait, Start gives the create up, and Close returns nil at once
// while the latch node is still there (first in line: nobody else can lead meanwhile).
func TestLatchCloseDuringStartWhoseContextEndsLeavesNothing(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/leader/ownership-close-during-start-ctx"
	_, err := c.Create(ctx, path, nil, framework.WithParents())
	require.NoError(t, err)

	l, err := leader.NewLatch(c, path, "a")
	require.NoError(t, err)
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	proxy.HoldReplies()
	started := testutil.Go(startCtx, l.Start)
	require.Eventually(t, func() bool {
		return len(testutil.Children(t, srv.ConnectString(), path)) == 1
	}, 20*time.Second, 10*time.Millisecond, "Start's create did not reach the server")
	closed := testutil.Go(ctx, func(context.Context) error { return l.Close() })
	testutil.NotYet(t, closed, 300*time.Millisecond, "Close (it waits for Start's create)")
	cancelStart()
	startErr := testutil.Result(t, started, 20*time.Second, "Start")
	var closeErr error
	returned := false
	select {
	case closeErr = <-closed:
		returned = true
	case <-time.After(time.Second):
	}
	if returned {
		left := testutil.Children(t, srv.ConnectString(), path)
		proxy.Heal()
		if len(left) > 0 {
			require.Errorf(t, closeErr, "Close returned nil while the latch node made by Start's create (reply held) is still there: %v (Start: %v)", left, startErr)
		}
	} else {
		proxy.Heal()
		closeErr = testutil.Result(t, closed, 30*time.Second, "Close")
		require.Empty(t, testutil.Children(t, srv.ConnectString(), path), "Close returned (%v) with the latch node still there", closeErr)
	}
	require.ErrorIs(t, startErr, leader.ErrClosed)
	assertNoChildren(t, srv.ConnectString(), path, c)
}

// A latch whose node another client deleted and made again under the same name (one
// transaction: readable, or one the latch may not read) neither takes that node for its
// own nor deletes it: its leadership ends, it makes a node of its own, and Close leaves
// the other's node in place.
func TestLatchLeavesAnotherClientsNodeAtItsName(t *testing.T) {
	for _, tc := range []struct {
		name string
		acl  []zk.ACL
	}{
		{"readable", zk.WorldACL(zk.PermAll)},
		{"unreadable", zk.DigestACL(zk.PermAll, "other", "secret")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			ca := testutil.ConnectFailFast(t, srv.ConnectString())
			cb := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithAuth("digest", []byte("other:secret")))
			ctx := testutil.Context(t, 60*time.Second)
			path := "/leader/ownership-remade-" + tc.name

			la := startLatch(t, ca, path, "a")
			term := await(t, la, 20*time.Second, "a leads")
			node := la.Node()
			_, err := cb.Transaction(ctx, framework.DeleteOp(node, -1),
				framework.CreateOp(node, []byte("other's"), framework.Ephemeral, tc.acl))
			require.NoError(t, err)
			st, err := cb.Exists(ctx, node)
			require.NoError(t, err)
			require.NotNil(t, st)

			testutil.WaitClosed(t, term.Done(), 20*time.Second, "a's term once its node was replaced")
			require.Eventually(t, func() bool { n := la.Node(); return n != "" && n != node }, 20*time.Second,
				10*time.Millisecond, "a did not make a node of its own after its node was replaced")
			require.False(t, la.HasLeadership(), "a leads on another client's node")
			require.NoError(t, la.Close())
			require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
			now, err := cb.Exists(ctx, node)
			require.NoError(t, err)
			require.NotNil(t, now, "a's Close deleted the node another client made at a's name")
			require.Equal(t, st.Czxid, now.Czxid)
			require.NoError(t, cb.Delete(ctx, node))
			assertNoChildren(t, srv.ConnectString(), path, ca, cb)
		})
	}
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

// A leader's client ends its session itself (a simulated Lost: suspended past its share
// of the session timeout) and starts a new one, while the server keeps the old session
// alive, and the latch node with it. The latch knows that node as its own (its czxid and
// its session, read when it took leadership) and, in the new session, deletes it
// ("Made in an earlier generation: gone with its session, or to be treated so") before it
// makes a new one: a node of ours left first in line would block the election (nobody
// leads) until the server expires the old session. OwnedBy(old session) makes that delete
// send nothing once the client's session is the new one.
func TestLatchDeletesItsOldSessionNodeAfterSimulatedLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	gate := testutil.NewSessionGate(proxy.Dialer())
	c, states := connectGated(t, srv, gate)
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	checker := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)
	const path = "/leader/ownership-old-session-node"

	la := startLatch(t, c, path, "a")
	term := await(t, la, 20*time.Second, "a leads")
	old := la.Node()
	oldSid := c.SessionID()
	_, err := c.Create(ctx, path+"-marker", nil, framework.WithMode(framework.Ephemeral)) // shows whether the old session lives
	require.NoError(t, err)
	lb := startLatch(t, other, path, "b")
	testutil.WaitParticipants(t, lb, 2, 20*time.Second)

	gate.Ban(oldSid)
	proxy.DropConnections()
	testutil.WaitClosed(t, term.Done(), 20*time.Second, "a's term once its connection dropped")
	testutil.WaitState(t, states, framework.Lost, 30*time.Second)
	testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
	require.NotEqual(t, oldSid, c.SessionID())

	gone := assert.Eventually(t, func() bool {
		st, err := checker.Exists(ctx, old)
		return err == nil && st == nil
	}, 20*time.Second, 20*time.Millisecond, "the latch left its old session's node %s first in line after its new session began", old)
	mst, err := checker.Exists(ctx, path+"-marker")
	require.NoError(t, err)
	require.NotNil(t, mst, "the old session ended on the server: the test proves nothing")
	require.Equal(t, oldSid, mst.EphemeralOwner)
	if gone {
		ps, err := la.Participants(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 2, "participants %v", ids(ps))
	}

	require.NoError(t, la.Close())
	require.NoError(t, lb.Close())
	require.NoError(t, checker.Delete(ctx, path+"-marker", framework.Quietly()))
	if !gone {
		require.NoError(t, checker.Delete(ctx, old, framework.Quietly()))
	}
	assertNoChildren(t, srv.ConnectString(), path, c, other)
}

// A latch in line (not leader: it never read its node as its session's) whose node
// another client deleted and made again at its name (one transaction) is closed while the
// connection is stalled: Close's read of the node gets no answer within its bound. The
// delete that follows must not take the name for proof: the node at the latch's name is
// another's (another session owns it), and a delete by name, sent once the connection is
// back in the same session, deletes it. What cannot be proven ours is left alone (a node
// of ours left behind goes with the session; another's deleted is a lock or a leadership
// taken from someone).
func TestLatchCloseWithoutAnswerLeavesAnotherClientsNodeAtItsName(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(40*time.Second))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	states := testutil.States(ca)
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/leader/ownership-remade-close-no-answer"

	lx := startLatch(t, cb, path, "x")
	await(t, lx, 20*time.Second, "x leads")
	la := startLatch(t, ca, path, "a")
	testutil.WaitParticipants(t, la, 2, 20*time.Second)
	node := la.Node()
	sid := ca.SessionID()
	_, err := cb.Transaction(ctx, framework.DeleteOp(node, -1),
		framework.CreateOp(node, []byte("other's"), framework.Ephemeral, zk.WorldACL(zk.PermAll)))
	require.NoError(t, err)
	st, err := cb.Exists(ctx, node)
	require.NoError(t, err)
	require.NotNil(t, st)
	require.NotEqual(t, sid, st.EphemeralOwner)

	proxy.Stall()
	closeErr := testutil.Result(t, testutil.Go(ctx, func(context.Context) error { return la.Close() }), 40*time.Second, "Close")
	t.Logf("Close: %v", closeErr)
	proxy.Heal()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	require.NoError(t, ca.WaitGuaranteedDeletes(wctx))
	cancel()
	require.Equal(t, sid, ca.SessionID(), "the session should survive the stall")
	select {
	case s := <-states:
		t.Logf("a's client went %v meanwhile", s)
	default:
	}

	now, err := cb.Exists(ctx, node)
	require.NoError(t, err)
	require.NotNil(t, now, "a's Close deleted the node another client made at a's name (its read of the node got no answer)")
	require.Equal(t, st.Czxid, now.Czxid)
	require.NoError(t, cb.Delete(ctx, node))
	require.NoError(t, lx.Close())
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

// As TestLatchDeletesItsOldSessionNodeAfterSimulatedLost, for a latch in line (not
// leader): it never read its node as its session's, and deleteNode's read, in the new
// session, finds the node owned by the old session and takes it for another's. The old
// session's node stays in line until the server expires that session: once the nodes
// ahead go, nobody leads.
func TestLatchInLineDeletesItsOldSessionNodeAfterSimulatedLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	gate := testutil.NewSessionGate(proxy.Dialer())
	c, states := connectGated(t, srv, gate)
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	checker := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)
	const path = "/leader/ownership-old-session-node-in-line"

	lx := startLatch(t, other, path, "x")
	await(t, lx, 20*time.Second, "x leads")
	la := startLatch(t, c, path, "a")
	testutil.WaitParticipants(t, la, 2, 20*time.Second)
	old := la.Node()
	oldSid := c.SessionID()
	_, err := c.Create(ctx, path+"-marker", nil, framework.WithMode(framework.Ephemeral)) // shows whether the old session lives
	require.NoError(t, err)

	gate.Ban(oldSid)
	proxy.DropConnections()
	testutil.WaitState(t, states, framework.Lost, 30*time.Second)
	testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
	require.NotEqual(t, oldSid, c.SessionID())

	gone := assert.Eventually(t, func() bool {
		st, err := checker.Exists(ctx, old)
		return err == nil && st == nil
	}, 20*time.Second, 20*time.Millisecond, "the latch left its old session's node %s in line after its new session began", old)
	mst, err := checker.Exists(ctx, path+"-marker")
	require.NoError(t, err)
	require.NotNil(t, mst, "the old session ended on the server: the test proves nothing")
	require.Equal(t, oldSid, mst.EphemeralOwner)

	require.NoError(t, lx.Close())
	if gone {
		await(t, la, 20*time.Second, "a leads once x left")
	}
	require.NoError(t, la.Close())
	require.NoError(t, checker.Delete(ctx, path+"-marker", framework.Quietly()))
	if !gone {
		require.NoError(t, checker.Delete(ctx, old, framework.Quietly()))
	}
	assertNoChildren(t, srv.ConnectString(), path, c, other)
}
