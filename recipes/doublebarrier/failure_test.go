package doublebarrier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// marker creates an ephemeral node of c's session, so that waitExpired can see the
// session go even when it has no member node.
func marker(t testing.TB, c *framework.Client, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.Create(ctx, path, nil, framework.WithMode(framework.Ephemeral), framework.WithContainerParents())
	require.NoError(t, err)
}

// waitExpired waits until the server has expired session sid (its ephemerals are gone).
func waitExpired(t testing.TB, srv *zktest.Server, sid int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sid]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire session 0x%x", sid)
}

// One member's session expires while it is inside: the others' Leave completes once its
// node is gone, and the expired member's Leave says what happened.
func TestSessionExpiresInside(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cx := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	c1, c2 := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/jobs/expire-inside"
	x, a, b := newMember(t, cx, path, 3), newMember(t, c1, path, 3), newMember(t, c2, path, 3)

	rx, ra := testutil.Go(ctx, x.Enter), testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, testutil.Result(t, rx, 10*time.Second, "Enter"))
	require.NoError(t, testutil.Result(t, ra, 10*time.Second, "Enter"))
	sid := cx.SessionID()
	marker(t, cx, path+"-marker")

	ra, rb := testutil.Go(ctx, a.Leave), testutil.Go(ctx, b.Leave)
	testutil.NotYet(t, ra, 300*time.Millisecond, "Leave while a member is inside")
	proxy.Stall()
	waitExpired(t, srv, sid)
	require.NoError(t, testutil.Result(t, ra, 15*time.Second, "Leave after the member's session expired"))
	require.NoError(t, testutil.Result(t, rb, 15*time.Second, "Leave after the member's session expired"))

	proxy.Heal()
	err := x.Leave(ctx)
	require.ErrorIs(t, err, doublebarrier.ErrSessionLost)
	t.Logf("expired member's Leave: %v", err)
	assertNoMembers(t, srv.ConnectString(), path, cx, c1, c2)

	// The member is outside again and can take part in a new round.
	const next = "/jobs/expire-inside-next"
	x2, a2 := newMember(t, cx, next, 2), newMember(t, c1, next, 2)
	r := testutil.Go(ctx, x2.Enter)
	require.NoError(t, a2.Enter(ctx))
	require.NoError(t, testutil.Result(t, r, 10*time.Second, "Enter in the new session"))
	r = testutil.Go(ctx, x2.Leave)
	require.NoError(t, a2.Leave(ctx))
	require.NoError(t, testutil.Result(t, r, 10*time.Second, "Leave in the new session"))
	assertNoMembers(t, srv.ConnectString(), next, cx, c1)
}

// The expired member was already waiting in Leave. As the lowest member it still had
// its node: its Leave says the session was lost. As another member it had deleted its
// node before the loss: its Leave completes. Either way the other member is not stuck.
func TestSessionExpiresWhileLeaving(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	for _, lowest := range []bool{true, false} {
		t.Run(fmt.Sprintf("lowest=%v", lowest), func(t *testing.T) {
			proxy := zktest.NewProxy(t, srv.ConnectString())
			cx := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
			c1 := testutil.ConnectFailFast(t, srv.ConnectString())
			ctx := testutil.Context(t, 90*time.Second)
			path := fmt.Sprintf("/jobs/expire-leaving-%v", lowest)
			a := newMember(t, c1, path, 2)
			x := newMember(t, cx, path, 2)
			for (x.Node() < a.Node()) != lowest { // same length: string order is node order
				x = newMember(t, cx, path, 2)
			}
			sid := cx.SessionID()
			marker(t, cx, path+"-marker")

			rx := testutil.Go(ctx, x.Enter)
			require.NoError(t, a.Enter(ctx))
			require.NoError(t, testutil.Result(t, rx, 10*time.Second, "Enter"))
			rx = testutil.Go(ctx, x.Leave)
			if lowest {
				testutil.NotYet(t, rx, 300*time.Millisecond, "Leave of the lowest while the other is inside")
			} else {
				waitChildren(t, srv.ConnectString(), path, 2) // a's node and ready: x's is gone
			}
			proxy.Stall()
			waitExpired(t, srv, sid)
			require.NoError(t, a.Leave(ctx), "the other member must not be stuck")
			proxy.Heal()
			err := testutil.Result(t, rx, 20*time.Second, "Leave of the expired member")
			t.Logf("expired member's Leave: %v", err)
			if lowest {
				require.ErrorIs(t, err, doublebarrier.ErrSessionLost)
			} else {
				require.NoError(t, err)
			}
			assert.NotEqual(t, sid, cx.SessionID())
			assertNoMembers(t, srv.ConnectString(), path, cx, c1)
		})
	}
}

// The session of a member waiting in Enter expires: it enters again in its new session
// and is counted.
func TestSessionExpiresWhileEntering(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cx := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	c1 := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/jobs/expire-entering"
	x, a := newMember(t, cx, path, 2), newMember(t, c1, path, 2)

	rx := testutil.Go(ctx, x.Enter)
	waitChildren(t, srv.ConnectString(), path, 1)
	sid := cx.SessionID()
	marker(t, cx, path+"-marker")
	proxy.Stall()
	waitExpired(t, srv, sid)
	proxy.Heal()
	// Back with a new session, x creates its node again.
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		if err != nil {
			return false
		}
		for owner, paths := range owners {
			if owner != sid && len(paths) == 1 && paths[0] == x.Node() {
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "the member did not enter again in its new session")
	testutil.NotYet(t, rx, 0, "Enter of one member out of two")

	require.NoError(t, a.Enter(ctx))
	require.NoError(t, testutil.Result(t, rx, 10*time.Second, "Enter after the session expired"))
	assert.NotEqual(t, sid, cx.SessionID())
	rx = testutil.Go(ctx, x.Leave)
	require.NoError(t, a.Leave(ctx))
	require.NoError(t, testutil.Result(t, rx, 10*time.Second, "Leave"))
	assertNoMembers(t, srv.ConnectString(), path, cx, c1)
}

// The server restarts while members wait in Enter: Enter completes once it is back.
func TestServerRestartDuringEnter(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewLocalServer(t) // one this test can stop and restart
	// The sessions must outlast the restart, which took 23 s once on a machine loaded
	// twelve times over: the timeout is far above that.
	opts := []framework.Option{framework.WithSessionTimeout(90 * time.Second), framework.WithConnectionTimeout(30 * time.Second)}
	c1, c2, c3 := testutil.ConnectFailFast(t, srv.ConnectString(), opts...), testutil.ConnectFailFast(t, srv.ConnectString(), opts...),
		testutil.ConnectFailFast(t, srv.ConnectString(), opts...)
	ctx := testutil.Context(t, 120*time.Second)
	const path = "/jobs/restart"
	a, b, z := newMember(t, c1, path, 3), newMember(t, c2, path, 3), newMember(t, c3, path, 3)
	sids := []int64{c1.SessionID(), c2.SessionID(), c3.SessionID()}

	ra, rb := testutil.Go(ctx, a.Enter), testutil.Go(ctx, b.Enter)
	waitChildren(t, srv.ConnectString(), path, 2)
	require.NoError(t, srv.Stop())
	rz := testutil.Go(ctx, z.Enter) // while the server is down
	testutil.NotYet(t, ra, 300*time.Millisecond, "Enter while the server is down")
	require.NoError(t, srv.Restart(ctx))

	require.NoError(t, testutil.Result(t, ra, 40*time.Second, "Enter after the restart"))
	require.NoError(t, testutil.Result(t, rb, 40*time.Second, "Enter after the restart"))
	require.NoError(t, testutil.Result(t, rz, 40*time.Second, "Enter after the restart"))
	assert.Equal(t, sids, []int64{c1.SessionID(), c2.SessionID(), c3.SessionID()}, "sessions should survive the restart")
	assert.Len(t, testutil.Children(t, srv.ConnectString(), path), 4)

	ra, rb = testutil.Go(ctx, a.Leave), testutil.Go(ctx, b.Leave)
	require.NoError(t, z.Leave(ctx))
	require.NoError(t, testutil.Result(t, ra, 10*time.Second, "Leave"))
	require.NoError(t, testutil.Result(t, rb, 10*time.Second, "Leave"))
	assertNoMembers(t, srv.ConnectString(), path, c1, c2, c3)
}

// A client closed while its member waits ends Enter with framework.ErrClosed.
func TestClientClosedDuringEnter(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/closed"
	d := newMember(t, c, path, 2)
	r := testutil.Go(ctx, d.Enter)
	waitChildren(t, srv.ConnectString(), path, 1)
	require.NoError(t, c.Close())
	require.ErrorIs(t, testutil.Result(t, r, 10*time.Second, "Enter on a closed client"), framework.ErrClosed)
	assertNoMembers(t, srv.ConnectString(), path)
}
