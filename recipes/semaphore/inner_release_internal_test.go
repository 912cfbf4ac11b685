package semaphore

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// The inner lock a granted lease took is deleted in the background (releaseInner). When
// that delete goes out after the session that made the inner-lock node has expired, what
// is at its path is not the lease's: another client that made its own node there in the
// meantime keeps it. The delete must be bound to the session that made the node
// (framework.OwnedBy), as every other delete of a lock node is.
//
// The interleaving is driven by the server's state: A's lease is granted and the
// background delete of its inner lock is held (testHookReleaseInner) before it is sent;
// A's proxy stalls until the server has expired A's session; B makes a node at the inner
// lock's path; the proxy heals; once A's client has its new session, the delete goes.
func TestInnerLockReleaseAfterExpiryLeavesAnotherSessionsNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(2*time.Second))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/innerrelease/sem"
	sa, err := New(ca, path, 1)
	require.NoError(t, err)
	ctx := testutil.Context(t, 90*time.Second)

	gate := make(chan struct{})
	held := make(chan struct{}, 1)
	hook := func(*Semaphore) {
		select {
		case held <- struct{}{}:
		default:
		}
		select {
		case <-gate:
		case <-time.After(60 * time.Second):
		}
	}
	testHookReleaseInner.Store(&hook)
	t.Cleanup(func() { testHookReleaseInner.Store(nil) })
	opened := false
	let := func() {
		if !opened {
			opened = true
			close(gate)
		}
	}
	defer let()

	la, err := sa.Acquire(ctx)
	require.NoError(t, err)
	testutil.WaitClosed(t, held, 20*time.Second, "the inner lock's release")
	sidA := ca.SessionID()
	locks, _, err := cb.Children(ctx, path+"/locks")
	require.NoError(t, err)
	require.Len(t, locks, 1, "A's inner lock")
	lockA := path + "/locks/" + locks[0]
	st, err := cb.Exists(ctx, lockA)
	require.NoError(t, err)
	require.NotNil(t, st)
	require.Equal(t, sidA, st.EphemeralOwner)

	proxy.Stall()
	require.Eventually(t, func() bool {
		ids, err := zktest.Sessions(srv.Addr())
		return err == nil && !slices.Contains(ids, sidA)
	}, 30*time.Second, 20*time.Millisecond, "the server did not expire A's session")
	_, err = cb.Create(ctx, lockA, []byte("B's"), framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	stB, err := cb.Exists(ctx, lockA)
	require.NoError(t, err)
	proxy.Heal()
	require.Eventually(t, func() bool {
		sid := ca.SessionID()
		return sid != 0 && sid != sidA
	}, 30*time.Second, 20*time.Millisecond, "A's client did not get a new session")

	let()
	select {
	case <-la.innerDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the inner lock's release did not end")
	}
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	now, err := cb.Exists(ctx, lockA)
	require.NoError(t, err)
	if assert.NotNil(t, now, "the inner lock's release, sent in A's new session, deleted the node B made at %s after A's session expired", lockA) {
		assert.Equal(t, stB.Czxid, now.Czxid)
	}

	require.ErrorIs(t, la.Release(ctx), ErrLeaseLost)
	_ = cb.Delete(ctx, lockA, framework.Quietly())
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), path+"/leases")
	testutil.RequireNoChildren(t, srv.ConnectString(), path+"/locks")
}
