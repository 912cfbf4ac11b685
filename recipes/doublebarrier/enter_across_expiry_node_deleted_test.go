package doublebarrier_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// Leave: "when someone else deleted the member's node while its session lived, one that
// matches ErrNodeDeleted"; ErrSessionLost is for "the member's node vanished while it was
// inside the barrier: its session expired". Here the client's first session expires while
// Enter is starting, before Enter made any node (held in the request hook on Enter's
// sync); Enter makes its node in the new session and goes in with the other member. The
// new session lives from then on. Another client deletes the member's node while it is
// inside: Leave must say ErrNodeDeleted. It says ErrSessionLost, because it compares the
// generation with the one Enter read before its first request, not the one its node was
// made in.
func TestLeaveAfterNodeDeletedIsNotSessionLostWhenEnterSpannedAnExpiry(t *testing.T) {
	testutil.KnownDefect(t, "Enter records the generation read before its node was made: an Enter that spans an expiry records the old one")
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 90*time.Second)
	var (
		mu     sync.Mutex
		armed  bool
		cx     *framework.Client
		expiry = make(chan error, 1)
	)
	cx = testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		mu.Lock()
		fire := armed && op == "sync"
		if fire {
			armed = false
		}
		mu.Unlock()
		if !fire {
			return
		}
		// Enter has read the generation; end the session before its sync goes out, and
		// wait for the client's new session.
		gen, sid := cx.Session()
		err := srv.ExpireSession(ctx, sid)
		for err == nil {
			g, s := cx.Session()
			if g != gen && s != sid && s != 0 && cx.State().IsConnected() {
				break
			}
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			time.Sleep(10 * time.Millisecond)
		}
		expiry <- err
	}))
	c1 := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/jobs/enter-across-expiry"
	x, a := newMember(t, cx, path, 2), newMember(t, c1, path, 2)

	mu.Lock()
	armed = true
	mu.Unlock()
	rx := testutil.Go(ctx, x.Enter)
	require.NoError(t, testutil.Result(t, expiry, 60*time.Second, "the expiry of the first session"))
	waitChildren(t, srv.ConnectString(), path, 1) // x's node, made in the new session
	require.NoError(t, a.Enter(ctx))
	require.NoError(t, testutil.Result(t, rx, 15*time.Second, "Enter"))
	sid, gen := cx.SessionID(), cx.Generation()
	_, st, err := other.GetData(ctx, x.Node())
	require.NoError(t, err)
	require.Equal(t, sid, st.EphemeralOwner, "x's node is owned by the session it has now")

	require.NoError(t, other.Delete(ctx, x.Node()))
	ra := testutil.Go(ctx, a.Leave)
	err = x.Leave(context.WithoutCancel(ctx))
	t.Logf("Leave of the member whose node another client deleted: %v", err)
	require.Equal(t, sid, cx.SessionID(), "the session changed")
	require.Equal(t, gen, cx.Generation(), "the session changed")
	require.ErrorIs(t, err, doublebarrier.ErrNodeDeleted,
		"the node was deleted by another client while the session that made it (0x%x) lived", sid)
	require.NotErrorIs(t, err, doublebarrier.ErrSessionLost, "Leave says the member's session was lost; session 0x%x lived", sid)
	require.NoError(t, testutil.Result(t, ra, 15*time.Second, "the other member's Leave"))
}
