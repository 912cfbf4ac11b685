package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestLatchBasics(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ca, cb := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/leader/latch-basics"
	ctx := testutil.Context(t, 60*time.Second)

	a := startLatch(t, ca, path, "a")
	ra := record(a)
	termA := await(t, a, 10*time.Second, "a alone")
	ra.wait(t, true, 5*time.Second)
	require.True(t, a.HasLeadership())
	tokA, err := a.Token(ctx)
	require.NoError(t, err)
	require.Positive(t, tokA)
	require.Equal(t, a.Node(), termA.Node())

	b := startLatch(t, cb, path, "b")
	rb := record(b)
	c := startLatch(t, cb, path, "c")
	parts := testutil.WaitParticipants(t, a, 3, 20*time.Second)
	require.Equal(t, []string{"a", "b", "c"}, ids(parts), "participants in order, leader first")
	require.Equal(t, []bool{true, false, false}, []bool{parts[0].Leader, parts[1].Leader, parts[2].Leader})
	require.Equal(t, a.Node(), parts[0].Node)
	for _, p := range parts {
		require.Regexp(t, latchNode, framework.NodeName(p.Node))
	}
	ld, err := c.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", ld.ID)
	require.True(t, ld.Leader)
	require.False(t, b.HasLeadership())
	_, err = b.Term()
	require.ErrorIs(t, err, leader.ErrNotLeader)
	_, err = b.Token(ctx)
	require.ErrorIs(t, err, leader.ErrNotLeader)
	actx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	require.ErrorIs(t, b.Await(actx), context.DeadlineExceeded)
	cancel()

	// Closing the leader hands leadership on at once, silently by default: through the
	// delete of a's node, not an expiry of a's session (which stays the same throughout).
	sessA := ca.SessionID()
	start := time.Now()
	require.NoError(t, a.Close())
	require.True(t, testutil.IsClosed(termA.Done()), "the term ends before Close returns")
	_, err = termA.Token(ctx)
	require.ErrorIs(t, err, leader.ErrLeadershipLost)
	termB := await(t, b, 5*time.Second, "b after a's close")
	t.Logf("leadership passed on in %v", time.Since(start))
	require.Equal(t, sessA, ca.SessionID(), "b leads while a's session is alive: a's Close handed over")
	rb.wait(t, true, 5*time.Second)
	require.Equal(t, []bool{true}, ra.events(), "a silent close tells a's listeners nothing")
	tokB, err := termB.Token(ctx)
	require.NoError(t, err)
	require.Greater(t, tokB, tokA, "fencing tokens increase")
	require.False(t, a.HasLeadership())
	require.ErrorIs(t, a.Await(ctx), leader.ErrClosed)
	require.NoError(t, a.Close(), "Close twice")
	require.Equal(t, []string{"b", "c"}, ids(testutil.WaitParticipants(t, c, 2, 20*time.Second)))

	// A removed listener hears nothing more.
	termCtx, stop := termB.Context(ctx)
	defer stop()
	require.NoError(t, b.Close())
	testutil.WaitClosed(t, termCtx.Done(), time.Second, "the term's context after Close")
	await(t, c, 5*time.Second, "c after b's close")
	require.NoError(t, c.Close())
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

func TestLatchCloseNotifyLeader(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	cl := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/leader/latch-notify"

	a := startLatch(t, cl, path, "a", leader.WithCloseMode(leader.CloseNotifyLeader))
	ra := record(a)
	b := startLatch(t, cl, path, "b", leader.WithCloseMode(leader.CloseNotifyLeader))
	rb := record(b)
	removed := 0
	remove := b.AddListener(func(bool) { removed++ })
	remove()
	await(t, a, 10*time.Second, "a")
	ra.wait(t, true, 5*time.Second)

	require.NoError(t, b.Close()) // not leader: nothing to tell
	require.NoError(t, a.Close())
	require.Equal(t, []bool{true, false}, ra.events(), "close while leader tells the listeners before returning")
	require.Empty(t, rb.events())
	require.Zero(t, removed)
	assertNoChildren(t, srv.ConnectString(), path, cl)
}

func TestLatchBadInput(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	cl := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)

	_, err := leader.NewLatch(nil, "/p", "id")
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
	for _, p := range []string{"", "p", "/p/", "/", "/a//b", "/a/./b", "/zookeeper", "/zookeeper/x", "/a\x01"} {
		_, err := leader.NewLatch(cl, p, "id")
		require.Error(t, err, "path %q", p)
		_, err = leader.NewSelector(cl, p, "id", func(context.Context) error { return nil })
		require.Error(t, err, "path %q", p)
	}
	_, err = leader.NewLatch(cl, "/p", "")
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = leader.NewLatch(cl, "/p", "id", leader.WithCloseMode(7))
	require.ErrorIs(t, err, framework.ErrInvalidArgument)

	fn := func(context.Context) error { return nil }
	_, err = leader.NewSelector(nil, "/p", "id", fn)
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = leader.NewSelector(cl, "/p", "", fn)
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = leader.NewSelector(cl, "/p", "id", nil)
	require.ErrorIs(t, err, framework.ErrInvalidArgument)

	// Latch: before Start, Start twice, after Close.
	const path = "/leader/bad-input"
	l, err := leader.NewLatch(cl, path, "x")
	require.NoError(t, err)
	require.ErrorIs(t, l.Await(ctx), leader.ErrNotStarted)
	require.False(t, l.HasLeadership())
	require.NoError(t, l.Start(ctx))
	require.ErrorIs(t, l.Start(ctx), leader.ErrAlreadyStarted)
	await(t, l, 10*time.Second, "x")
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.Start(ctx), leader.ErrClosed)
	require.ErrorIs(t, l.Await(ctx), leader.ErrClosed)
	_, err = l.Term()
	require.ErrorIs(t, err, leader.ErrNotLeader)

	// A latch closed before it started.
	l2, err := leader.NewLatch(cl, path, "y")
	require.NoError(t, err)
	require.NoError(t, l2.Close())
	require.ErrorIs(t, l2.Start(ctx), leader.ErrClosed)

	// A failed Start (cancelled) leaves nothing and may be retried.
	l3, err := leader.NewLatch(cl, path, "z")
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, l3.Start(cctx), context.Canceled)
	require.NoError(t, l3.Start(ctx))
	require.NoError(t, l3.Close())

	// Selector: Requeue before Start, Start twice, after Close.
	s, err := leader.NewSelector(cl, path, "s", func(ctx context.Context) error { <-ctx.Done(); return nil })
	require.NoError(t, err)
	require.ErrorIs(t, s.Requeue(), leader.ErrNotStarted)
	require.NoError(t, s.Start(ctx))
	require.ErrorIs(t, s.Start(ctx), leader.ErrAlreadyStarted)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Start(ctx), leader.ErrClosed)
	require.ErrorIs(t, s.Requeue(), leader.ErrClosed)

	// A closed client.
	c2 := testutil.ConnectFailFast(t, srv.ConnectString())
	require.NoError(t, c2.Close())
	l4, err := leader.NewLatch(c2, path, "w")
	require.NoError(t, err)
	require.ErrorIs(t, l4.Start(ctx), framework.ErrClosed)
	s2, err := leader.NewSelector(c2, path, "w", fn)
	require.NoError(t, err)
	require.ErrorIs(t, s2.Start(ctx), framework.ErrClosed)

	_, err = l.Leader(ctx)
	require.ErrorIs(t, err, leader.ErrNoLeader)
	assertNoChildren(t, srv.ConnectString(), path, cl)
}

// A leader whose node is deleted behind its back stops leading and enters again.
func TestLatchNodeDeleted(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	cl := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/leader/latch-deleted"
	ctx := testutil.Context(t, 60*time.Second)

	a := startLatch(t, cl, path, "a")
	term := await(t, a, 10*time.Second, "a")
	b := startLatch(t, cl, path, "b")
	testutil.WaitParticipants(t, a, 2, 20*time.Second)

	conn, err := zktest.Dial(ctx, srv.ConnectString(), 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.Delete(term.Node(), -1))
	testutil.WaitClosed(t, term.Done(), 5*time.Second, "a's term after its node was deleted")
	await(t, b, 5*time.Second, "b after a's node went")
	parts := testutil.WaitParticipants(t, a, 2, 20*time.Second)
	require.Equal(t, []string{"b", "a"}, ids(parts), "a is back in line, behind b")
	require.NotEqual(t, term.Node(), a.Node())
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	assertNoChildren(t, srv.ConnectString(), path, cl)
}

// Suspended ends leadership under the standard error policy, not under the session
// policy; after the reconnection the same session keeps its node and leads again.
func TestLatchSuspended(t *testing.T) {
	for _, policy := range []framework.ErrorPolicy{framework.StandardErrorPolicy, framework.SessionErrorPolicy} {
		t.Run(policy.String(), func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			proxy := zktest.NewProxy(t, srv.ConnectString())
			cl := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithErrorPolicy(policy))
			states := make(chan framework.State, 16)
			cl.AddListener(func(s framework.State) {
				select {
				case states <- s:
				default:
				}
			})
			const path = "/leader/latch-suspended"
			a := startLatch(t, cl, path, "a")
			ra := record(a)
			term := await(t, a, 10*time.Second, "a")
			ra.wait(t, true, 5*time.Second)
			sid := cl.SessionID()
			node := a.Node()

			proxy.DropConnections()
			testutil.WaitState(t, states, framework.Reconnected, 10*time.Second)
			require.Equal(t, sid, cl.SessionID())
			if policy == framework.StandardErrorPolicy {
				require.True(t, testutil.IsClosed(term.Done()), "Suspended ends the term")
				ra.wait(t, false, 5*time.Second)
				ra.wait(t, true, 10*time.Second)
				term2 := await(t, a, 10*time.Second, "a after the reconnection")
				require.NotSame(t, term, term2)
				require.Equal(t, node, term2.Node(), "the session survived: same node")
			} else {
				require.False(t, testutil.IsClosed(term.Done()), "Suspended does not end the term")
				require.True(t, a.HasLeadership())
				require.Equal(t, []bool{true}, ra.events())
			}
			require.NoError(t, a.Close())
			assertNoChildren(t, srv.ConnectString(), path, cl)
		})
	}
}

// The leader's session expires (its traffic is stalled until the server gives up on
// it): the next participant leads, and the old leader comes back with a new node.
func TestLatchSessionExpires(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/leader/latch-expire"

	a := startLatch(t, ca, path, "a")
	termA := await(t, a, 10*time.Second, "a")
	b := startLatch(t, cb, path, "b")
	testutil.WaitParticipants(t, b, 2, 20*time.Second)
	sidA := ca.SessionID()

	proxy.Stall()
	testutil.WaitClosed(t, termA.Done(), 10*time.Second, "a's term once cut off")
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sidA]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire a's session")
	await(t, b, 10*time.Second, "b after a's session expired")
	proxy.Heal()

	parts := testutil.WaitParticipants(t, b, 2, 20*time.Second)
	require.Equal(t, []string{"b", "a"}, ids(parts), "a is back, behind b")
	require.NotEqual(t, sidA, ca.SessionID())
	require.False(t, a.HasLeadership())
	require.NoError(t, b.Close())
	await(t, a, 10*time.Second, "a after b's close")
	require.NoError(t, a.Close())
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}
