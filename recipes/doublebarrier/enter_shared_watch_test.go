package doublebarrier_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// Enter does not go in alone by a ready that came and went before its node was made.
// Member A (memberQty 2) on client c gives up its Enter: its exists watch on ready stays
// set on c. Member M on c then enters; it syncs, creates its node, and its ExistsW on
// ready shares A's watch (one per node and kind on a client). Between the sync and the
// create, a whole round of two other members enters and leaves on another client: ready
// is created and deleted, and the NodeCreated event for A's watch is held in the network
// until M's create has gone out. M's read answers "no ready"; M lists one member (itself)
// of 2, and must wait. The held event fired A's watch before M's read was answered, so it
// is not M's: taking it for "the barrier opened while our node was there", M would go in
// alone.
func TestEnterNotInAloneByReadyBeforeItsRead(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	const path = "/sharedwatch/barrier"
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)

	var armed atomic.Bool
	roundErr := make(chan error, 1)
	var sent atomic.Int64
	sent.Store(-1)
	c := testutil.Connect(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(60*time.Second),
		framework.WithRequestHook(func(op string) {
			if op != "create" || !armed.CompareAndSwap(true, false) {
				return
			}
			// M's create of its node, after its sync: a whole round passes before it,
			// and c hears of it only after M's create and its look at ready were answered.
			proxy.HoldReplies()
			b1, b2 := newMember(t, other, path, 2), newMember(t, other, path, 2)
			in1 := testutil.Go(ctx, b1.Enter)
			err := b2.Enter(ctx)
			if err == nil {
				err = <-in1
			}
			if err == nil {
				out1 := testutil.Go(ctx, b1.Leave)
				err = b2.Leave(ctx)
				if err == nil {
					err = <-out1
				}
			}
			roundErr <- err
			sent.Store(int64(proxy.Forwarded()))
		}))

	a := newMember(t, c, path, 2)
	actx, cancel := context.WithTimeout(ctx, time.Second)
	err := a.Enter(actx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "A is alone: its Enter gives up")
	require.Equal(t, 1, c.Watches(), "A's exists watch on ready stays set")

	m := newMember(t, c, path, 2)
	armed.Store(true)
	go func() {
		for sent.Load() < 0 || int64(proxy.Forwarded()) <= sent.Load() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
		proxy.Heal() // M's read reached the server
	}()
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = m.Enter(mctx)
	require.NoError(t, <-roundErr, "the other round")
	if err == nil {
		require.NoError(t, m.Leave(ctx))
	}
	require.ErrorIs(t, err, context.DeadlineExceeded,
		"M went in alone (memberQty 2, one member node: its own) by a ready created and deleted before its look at ready")
	assertNoMembers(t, srv.ConnectString(), path, c, other)
}
