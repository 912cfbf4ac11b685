package doublebarrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// A member waits in Enter when its client starts a new session while the member node of
// its old session is still on the server (the client ended that session itself: a
// simulated Lost, its close never reached the server). Enter must take the old node for
// what it is, another session's, replace it with one of the new session, and get in when
// the barrier opens, not wait forever (ensureOurs compares the node's owner
// with Client.SessionID, which was suspected to lag go-zookeeper's own session).
func TestEnterReplacesOldSessionNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	l := newLosingClient(t, srv)
	c := l.c
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	checker := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)
	l.connected(t, ctx)

	const path = "/jobs/old-session"
	b, a := newMember(t, c, path, 2), newMember(t, other, path, 2)
	entered := testutil.Go(ctx, b.Enter)
	waitChildren(t, srv.ConnectString(), path, 1) // b's node, made in the old session
	oldSid := c.SessionID()
	marker(t, c, path+"-marker") // shows whether the old session is still alive
	old, err := checker.Exists(ctx, b.Node())
	require.NoError(t, err)
	require.NotNil(t, old)
	require.Equal(t, oldSid, old.EphemeralOwner)

	// A dead host: the connection goes, no new one gets through; the client's timer says
	// Lost, it ends the session (the close cannot reach the server) and starts a new one.
	l.loseSession(t)
	l.reconnect(t)
	newSid := c.SessionID()
	require.NotEqual(t, oldSid, newSid)

	// Enter, still waiting, replaces the old session's node by one of the new session
	// while the old session is still alive (its marker is there).
	require.Eventually(t, func() bool {
		st, err := checker.Exists(ctx, b.Node())
		return err == nil && st != nil && st.EphemeralOwner == newSid
	}, 30*time.Second, 20*time.Millisecond, "Enter does not replace the old session's member node %s", b.Node())
	st, err := checker.Exists(ctx, path+"-marker")
	require.NoError(t, err)
	if st == nil {
		// The old connection got through after the heal and closed its own session
		// (go-zookeeper's shutdown of it is not synchronous; failed once in three runs):
		// this run cannot show the replacement happened while the old session lived, but
		// Enter must still get in below.
		t.Log("the old session ended on the server before the test could look; the replacement is not proven to have come first in this run")
	} else {
		require.Equal(t, oldSid, st.EphemeralOwner)
	}
	testutil.NotYet(t, entered, 200*time.Millisecond, "Enter with one member of two")

	// The second member opens the barrier: both get in.
	require.NoError(t, a.Enter(ctx))
	require.NoError(t, testutil.Result(t, entered, 20*time.Second, "Enter in the new session"))

	left := testutil.Go(ctx, b.Leave)
	require.NoError(t, a.Leave(ctx))
	require.NoError(t, testutil.Result(t, left, 20*time.Second, "Leave"))
	require.NoError(t, checker.Delete(ctx, path+"-marker", framework.Quietly()))
	assertNoMembers(t, srv.ConnectString(), path, c, other)
}

// A member counted by the ready's maker while its node was its old session's is in once
// it has replaced that node, though the ready is older than the new node and the other
// members have deleted theirs and wait for it: the ready is its round's, not a leftover
// (taking it for one, the member deleted it and waited for members who waited for it).
// The replacement is one transaction: the others never list the barrier without the
// member's node, which would end their round without it.
func TestEnterCountedBeforeItsNodeWasReplacedIsIn(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	l := newLosingClient(t, srv)
	c := l.c
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)
	l.connected(t, ctx)

	const path = "/jobs/counted-old-node"
	v := newMember(t, c, path, 3)
	// b and c are named after v: v's node is the lowest, which the others wait for once
	// they have deleted their own.
	later := func() *doublebarrier.DoubleBarrier {
		for {
			if m := newMember(t, other, path, 3); m.Node() > v.Node() {
				return m
			}
		}
	}
	b, cm := later(), later()
	vIn := testutil.Go(ctx, v.Enter)
	waitChildren(t, srv.ConnectString(), path, 1)
	bIn := testutil.Go(ctx, b.Enter)
	waitChildren(t, srv.ConnectString(), path, 2)

	// v's client gives its session up (a dead host: no close reaches the server); c counts
	// v's old node and makes ready; b and c go in, and leave: each deletes its node and
	// waits for v's.
	l.loseSession(t)
	require.NoError(t, cm.Enter(ctx))
	require.NoError(t, testutil.Result(t, bIn, 20*time.Second, "b's Enter"))
	bOut, cOut := testutil.Go(ctx, b.Leave), testutil.Go(ctx, cm.Leave)
	waitChildren(t, srv.ConnectString(), path, 2) // v's old node and ready

	l.proxy.Heal()
	require.NoError(t, testutil.Result(t, vIn, 30*time.Second, "v's Enter, counted by the round's ready"))
	require.NoError(t, v.Leave(ctx))
	require.NoError(t, testutil.Result(t, bOut, 20*time.Second, "b's Leave"))
	require.NoError(t, testutil.Result(t, cOut, 20*time.Second, "c's Leave"))
	assertNoMembers(t, srv.ConnectString(), path, c, other)
}

// A member whose client starts a new session while another client's node stands at the
// member's name (made there after the member's node was deleted) does not take that node
// for its old session's: it leaves it, and makes its node under a new name.
func TestEnterLeavesAnotherSessionsNodeAtItsName(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	l := newLosingClient(t, srv)
	c := l.c
	adv := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)
	l.connected(t, ctx)

	const path = "/jobs/forged-name"
	v := newMember(t, c, path, 3) // (the other client's node counts: two nodes do not open it)
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	entered := testutil.Go(ectx, v.Enter)
	waitChildren(t, srv.ConnectString(), path, 1)
	name := v.Node()

	// Another client deletes the member's node and makes its own at the name.
	require.NoError(t, adv.Delete(ctx, name))
	_, err := adv.Create(ctx, name, []byte("not the member's"), framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	forged, err := adv.Exists(ctx, name)
	require.NoError(t, err)
	require.NotNil(t, forged)

	// The member's client gives its session up and starts a new one; Enter, still
	// waiting, makes its node again.
	l.loseSession(t)
	l.reconnect(t)
	var kids []string
	require.Eventually(t, func() bool {
		k, err := zktest.Children(ctx, srv.ConnectString(), path)
		kids = k
		return err == nil && len(k) == 2
	}, 30*time.Second, 20*time.Millisecond, "the member makes its node again beside the other client's (children %v)", &kids)
	st, err := adv.Exists(ctx, name)
	require.NoError(t, err)
	require.NotNil(t, st, "the member deleted the other client's node at its name")
	require.Equal(t, forged.Czxid, st.Czxid, "the member replaced the other client's node at its name")
	require.NotEqual(t, name, v.Node(), "the member kept the name another client's node stands at")

	cancel()
	require.ErrorIs(t, testutil.Result(t, entered, 20*time.Second, "Enter cancelled"), context.Canceled)
	require.NoError(t, adv.Delete(ctx, name))
	assertNoMembers(t, srv.ConnectString(), path, c, adv)
}

// losingClient is a client behind a proxy that gives its session up when the proxy cuts
// it off: Lost at 10 % of a 90 s session, while the server holds the old session, and its
// nodes, long after the client has a new one (a 20 s session was seen to end on the
// server before a loaded machine had reconnected: stalls of 23 s).
type losingClient struct {
	c      *framework.Client
	proxy  *zktest.Proxy
	states <-chan framework.State
}

func newLosingClient(t *testing.T, srv *zktest.Server) *losingClient {
	t.Helper()
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(90*time.Second),
		framework.WithSimulatedExpiry(0.1), framework.WithConnectionTimeout(2*time.Second),
		framework.WithDialer(proxy.Dialer()), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	l := &losingClient{c: c, proxy: proxy, states: testutil.States(c)}
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Close() })
	return l
}

// connected waits for the client's first session.
func (l *losingClient) connected(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, l.c.BlockUntilConnected(ctx))
	testutil.WaitState(t, l.states, framework.Connected, 10*time.Second)
}

// loseSession cuts the client off (a dead host: the connection goes, no new one gets
// through) until its timer says Lost and it ends the session (its close cannot reach the
// server).
func (l *losingClient) loseSession(t *testing.T) {
	t.Helper()
	l.proxy.Refuse()
	l.proxy.DropConnections()
	testutil.WaitState(t, l.states, framework.Lost, 40*time.Second) // 9 s after the drop
}

// reconnect heals the proxy and waits for the client's new session.
func (l *losingClient) reconnect(t *testing.T) {
	t.Helper()
	l.proxy.Heal()
	testutil.WaitState(t, l.states, framework.Reconnected, 30*time.Second)
}
