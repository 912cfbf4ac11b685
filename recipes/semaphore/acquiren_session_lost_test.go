package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// AcquireN: "takes n leases ... On failure or cancellation, the leases it took are
// returned and no node is left". A success is n leases held at once. When the session
// expires while AcquireN waits for its second lease, its first lease goes with the
// session; the wait starts over on the new session and gets one lease: AcquireN then
// reports success with two leases, one of them already gone (its node deleted by the
// expiry), so the caller believes it holds two of the semaphore's leases while it holds
// one, and another client can take the one it believes it holds.
func TestAcquireNSessionLostWhileWaitingIsNoSuccess(t *testing.T) {
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/sem/acquiren-expiry"
	hc := testutil.Connect(t, srv.ConnectString())
	h, err := semaphore.New(hc, path, 2)
	require.NoError(t, err)
	ac := testutil.Connect(t, srv.ConnectString())
	a, err := semaphore.New(ac, path, 2)
	require.NoError(t, err)
	admin := testutil.Connect(t, srv.ConnectString())

	held, err := h.Acquire(ctx)
	require.NoError(t, err)
	type res struct {
		ls  []*semaphore.Lease
		err error
	}
	got := make(chan res, 1)
	go func() {
		ls, err := a.AcquireN(ctx, 2)
		got <- res{ls, err}
	}()
	// A's first lease is granted (2 of 2), its second waits (3 nodes).
	waitKids(t, ctx, admin, path+"/leases", 3)
	require.NoError(t, srv.ExpireSession(ctx, ac.SessionID()))
	var r res
	select {
	case r = <-got:
	case <-ctx.Done():
		t.Fatal("AcquireN never returned")
	}
	if r.err != nil {
		t.Logf("AcquireN failed: %v", r.err)
		return
	}
	require.Len(t, r.ls, 2)
	sid := ac.SessionID()
	for i, l := range r.ls {
		st, err := admin.Exists(ctx, l.Node())
		require.NoError(t, err)
		if assert.NotNil(t, st, "AcquireN succeeded, but its lease %d's node %s is gone (its session expired while AcquireN waited)", i, l.Node()) {
			assert.Equal(t, sid, st.EphemeralOwner, "lease %d", i)
		}
	}
	require.NoError(t, held.Release(ctx))
	_ = semaphore.ReturnAll(ctx, r.ls...)
}
