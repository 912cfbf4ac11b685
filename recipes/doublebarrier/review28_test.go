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

// Review of issue 28.19/28.24: Enter does not go in alone by a ready that came and went
// before its node was made. Member A (memberQty 2) on client c gives up its Enter (when
// Enter watched ready with an exists watch, that watch stayed set on c and M shared it).
// Member M on c then enters; it syncs; between the sync and the create of its node, a
// whole round of two other members enters and leaves on another client: ready is
// created and deleted, with the events held in the network. M lists one member (itself)
// of 2, and must wait; it must not take a held event for "the barrier opened".
func TestReview28EnterNotInAloneByRoundBeforeItsRead(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	const path = "/review28/barrier"
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
			// M's create of its node, after its sync: a whole round passes meanwhile, and
			// c hears of it only after M's create was answered.
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
