package doublebarrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A member whose session expired while it waited in Enter does not go in, once back, by a
// ready made while it had no node: a round that never counted it, and that no member is
// left in. x (memberQty 2) enters alone and waits (its listing was answered). Its session
// expires on the server: its node is gone. a and b (memberQty 2) enter: a's or b's
// listing shows a and b only, and makes ready. Both sessions end while they are inside
// (their clients close): their nodes go, ready stays, a leftover. Enter's documentation:
// "A ready left by a round with no member left lets nobody in." x's client comes back
// with a new session; x's Enter makes its node again and finds that ready, made after the
// first node of this Enter but while no node of x's was there (its maker could not have
// counted x): x, alone, must not go in by it.
func TestEnterAfterSessionExpiryNotInByLeftoverReady(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/expired/leftover"

	listed := make(chan struct{}, 1)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cx := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "getChildren" && r.Path == path && r.Err == nil {
				select {
				case listed <- struct{}{}:
				default:
				}
			}
		}))
	adm := testutil.ConnectFailFast(t, srv.ConnectString())
	x := newMember(t, cx, path, 2)
	xctx, cancel := context.WithCancel(ctx)
	defer cancel()
	entered := testutil.Go(xctx, x.Enter)
	testutil.WaitClosed(t, waitChan(listed), 20*time.Second, "x's listing of the barrier (its node, no ready)")
	testutil.NotYet(t, entered, 0, "x's Enter, alone (memberQty 2)")

	// x's host drops off the network; the server expires its session: x's node is gone.
	sid := cx.SessionID()
	proxy.Stall()
	waitExpired(t, srv, sid)
	require.Empty(t, testutil.Children(t, srv.ConnectString(), path))

	// A round of a and b, which never saw x: they enter, and their sessions end inside.
	ca, cb := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	a, b := newMember(t, ca, path, 2), newMember(t, cb, path, 2)
	aIn := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, testutil.Result(t, aIn, 20*time.Second, "a's Enter"))
	leftover, err := adm.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, leftover)
	require.NoError(t, ca.Close())
	require.NoError(t, cb.Close())
	require.Equal(t, []string{"ready"}, testutil.Children(t, srv.ConnectString(), path), "a leftover ready, no member")

	// x is back with a new session: its Enter makes its node again and finds the leftover.
	proxy.Heal()
	var kids []string
	for {
		select {
		case err := <-entered:
			st, _ := adm.Exists(ctx, path+"/ready")
			kids = testutil.Children(t, srv.ConnectString(), path)
			if err == nil {
				require.NoError(t, x.Leave(ctx))
			}
			require.Failf(t, "x went in alone by a leftover ready",
				"x's Enter returned %v, memberQty 2, children %v: by the ready (czxid %d, there now: %v) that a and b "+
					"made while x had no node (its session 0x%x expired), and whose members are all gone",
				err, kids, leftover.Czxid, st != nil && st.Czxid == leftover.Czxid, sid)
		case <-time.After(20 * time.Millisecond):
		}
		kids = testutil.Children(t, srv.ConnectString(), path)
		if st, err := adm.Exists(ctx, path+"/ready"); err == nil && (st == nil || st.Czxid != leftover.Czxid) {
			break // the leftover is gone: x took it for one and deleted it
		}
	}
	testutil.NotYet(t, entered, time.Second, "x's Enter, alone (memberQty 2)")
	cancel()
	require.ErrorIs(t, testutil.Result(t, entered, 20*time.Second, "x's cancelled Enter"), context.Canceled)
	assertNoMembers(t, srv.ConnectString(), path, cx, adm)
}
