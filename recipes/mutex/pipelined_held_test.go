package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// Two Mutex values of one client, on one path, both on the hint path: the first holds
// through the listing's children watch; the second tries, fails (held), and gives its
// node back. Someone else then deletes the holder's node: the holder's lease must end
// lost and its release say so.
func TestPipelinedTwoMutexesOneClientForeignDeleteEndsLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/pipelined/two"
	ma, mb := newMutex(t, c, path), newMutex(t, c, path)
	warmPipe(t, c, ma)
	warmPipe(t, c, mb)
	ctx := testutil.Context(t, 30*time.Second)
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	_, err = mb.TryAcquire(ctx)
	require.ErrorIs(t, err, mutex.ErrLocked)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.Len(t, testutil.Children(t, srv.ConnectString(), path), 1)
	require.NoError(t, admin.Delete(ctx, la.Node()))
	testutil.WaitClosed(t, la.Done(), 10*time.Second, "A's Done after someone else deleted its node")
	require.ErrorIs(t, la.Release(ctx), mutex.ErrLeaseLost)
	// and the second Mutex still works
	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lb.Release(ctx))
}

// A holder on the hint path whose session expires: Done closes, Release reports lost.
func TestPipelinedSessionExpiryWhileHeldEndsLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	const path = "/pipelined/expire"
	m := newMutex(t, c, path)
	warmPipe(t, c, m)
	ctx := testutil.Context(t, 60*time.Second)
	before := c.Requests()
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), int64(c.Requests()-before), "not the hint path")
	sid := c.SessionID()
	proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sid]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire the session")
	testutil.WaitClosed(t, l.Done(), 10*time.Second, "Done after the session expired")
	proxy.Heal()
	require.ErrorIs(t, l.Release(ctx), mutex.ErrLeaseLost)
}

// The holder's node is deleted by someone else and the parent deleted and made again
// with another contender's node in it (a node of the same lock, another session), all
// while the holder's connection is cut (the session lives on). After the reconnection
// the lease must end lost, and its release say so.
func TestPipelinedParentRemadeWhileDisconnectedEndsLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithErrorPolicy(framework.SessionErrorPolicy))
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/pipelined/remade"
	m := newMutex(t, c, path)
	warmPipe(t, c, m)
	ctx := testutil.Context(t, 60*time.Second)
	before := c.Requests()
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), int64(c.Requests()-before), "not the hint path")
	gen := c.Generation()
	proxy.Stall()
	proxy.DropConnections()
	require.NoError(t, admin.Delete(ctx, l.Node()))
	require.NoError(t, admin.Delete(ctx, path))
	other, err := newMutex(t, admin, path).Acquire(ctx)
	require.NoError(t, err)
	proxy.Heal()
	testutil.WaitClosed(t, l.Done(), 20*time.Second, "Done after the node was deleted (parent made again)")
	require.Equal(t, gen, c.Generation(), "the same session throughout")
	require.ErrorIs(t, l.Release(ctx), mutex.ErrLeaseLost)
	require.NoError(t, other.Release(ctx))
}
