package semaphore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// A waiter whose session expires while it waits for room gives up its lease node and its
// inner lock, and starts over: but what is at those paths once the session is gone is not
// its own. Another client that made its own nodes at both paths in the meantime (the
// names are in every listing) keeps them: the waiter's clean-up, sent on its new session,
// must delete only nodes of the session that made its own (as the lock internals' failed
// acquisition does, framework.OwnedBy), never whatever is at the name.
//
// The interleaving is driven by the server's state: B holds the only lease; A waits (its
// lease node and its inner lock on the server, its children watch set); A's proxy stalls
// until the server has expired A's session; B makes its nodes at A's two paths; the
// proxy heals; once A's client has its new session, A gives up (its context is
// cancelled). Nothing of A reaches the server before B's nodes are there.
func TestExpiredWaiterLeavesAnotherSessionsNodesAtItsPaths(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(2*time.Second))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/expiredwaiter/sem"
	sa, err := semaphore.New(ca, path, 1)
	require.NoError(t, err)
	sb, err := semaphore.New(cb, path, 1)
	require.NoError(t, err)
	ctx := testutil.Context(t, 90*time.Second)

	lb, err := sb.Acquire(ctx)
	require.NoError(t, err)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make(chan error, 1)
	go func() {
		l, err := sa.Acquire(actx)
		if l != nil {
			_ = l.Release(context.WithoutCancel(ctx))
		}
		res <- err
	}()

	// A waits for room: its lease node behind B's, its inner-lock node alone under locks.
	sidA := ca.SessionID()
	var leaseA, lockA string
	require.Eventually(t, func() bool {
		leases, _, err1 := cb.Children(ctx, path+"/leases")
		locks, _, err2 := cb.Children(ctx, path+"/locks")
		if err1 != nil || err2 != nil || len(leases) != 2 || len(locks) != 1 {
			return false
		}
		for _, k := range leases {
			if p := path + "/leases/" + k; p != lb.Node() {
				leaseA = p
			}
		}
		lockA = path + "/locks/" + locks[0]
		return true
	}, 20*time.Second, 20*time.Millisecond, "A does not wait for a lease")
	for _, p := range []string{leaseA, lockA} {
		st, err := cb.Exists(ctx, p)
		require.NoError(t, err)
		require.NotNil(t, st)
		require.Equal(t, sidA, st.EphemeralOwner, "%s is not A's", p)
	}

	// Its listing's answer came back: its children watch on the leases is set in its
	// session (go-zookeeper registers it with the answer), so that it wakes when the
	// session ends.
	require.Eventually(t, func() bool {
		return testutil.ZKWatchers(t, ca, path+"/leases").Children > 0
	}, 20*time.Second, 20*time.Millisecond, "A's children watch on the leases is not set")

	proxy.Stall()
	require.Eventually(t, func() bool {
		ids, err := zktest.Sessions(srv.Addr())
		return err == nil && !slices.Contains(ids, sidA)
	}, 30*time.Second, 20*time.Millisecond, "the server did not expire A's session")
	// B's own nodes at A's two paths (A's went with its session).
	czxids := map[string]int64{}
	for _, p := range []string{leaseA, lockA} {
		_, err := cb.Create(ctx, p, []byte("B's"), framework.WithMode(framework.Ephemeral))
		require.NoError(t, err)
		st, err := cb.Exists(ctx, p)
		require.NoError(t, err)
		czxids[p] = st.Czxid
	}
	proxy.Heal()

	// A's client is back, in a new session. Whether A saw its lease node gone and
	// started over, or still waits (its wake-up on the old session's end can come before
	// the client's generation changes, and the listing it then sends in the new session
	// shows B's node at its lease's name), it gives up now: every path out of the
	// acquisition deletes what the attempt made, and the clean-up of the expired attempt
	// has run, or was handed to the client's background work, once Acquire returned and
	// WaitGuaranteedDeletes did.
	require.Eventually(t, func() bool {
		sid := ca.SessionID()
		return sid != 0 && sid != sidA
	}, 30*time.Second, 20*time.Millisecond, "A's client did not get a new session")
	cancel()
	select {
	case err := <-res:
		t.Logf("A's Acquire returned: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("A's Acquire did not return after its context was cancelled")
	}
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))

	for _, p := range []string{leaseA, lockA} {
		st, err := cb.Exists(ctx, p)
		require.NoError(t, err)
		if assert.NotNil(t, st, "A's clean-up in its new session deleted the node B made at %s after A's session expired", p) {
			assert.Equal(t, czxids[p], st.Czxid, "%s is not B's node any more", p)
		}
	}

	// Clean up: B's nodes and lease go.
	for _, p := range []string{leaseA, lockA} {
		_ = cb.Delete(ctx, p, framework.Quietly())
	}
	require.NoError(t, lb.Release(ctx))
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	requireEmpty(t, srv.ConnectString(), path)
}
