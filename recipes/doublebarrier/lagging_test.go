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

// An Enter on a server that lags does not go in by the last round's ready
// (REFERENCE.md: "A release or an admission never rests on a stale read"). A round of two
// members ends through the leader while member W's server, a follower, is cut off from
// its peers: that follower still shows the round's ready. W's Enter must not take it for
// this round's: it syncs first (which the cut-off follower answers only once it is back
// with its peers), then sees no ready and waits for a second member. Curator reads ready
// without a sync and goes in alone.
//
// The cut is healed as soon as W's Enter sends its first request after its look at ready
// (its member create) or its sync, whichever it sends: before the fix Enter then returns
// nil, alone; after it, Enter lists the members (one, itself) and waits.
func TestEnterOnLaggingServerIgnoresLastRoundsReady(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3, zktest.WithPeerProxies())
	leader, err := ens.Leader()
	require.NoError(t, err)
	f := (leader + 1) % ens.Size()
	const path = "/lagging/barrier"
	progressed := make(chan struct{}, 1)
	listed := make(chan struct{}, 1)
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	x := testutil.Connect(t, ens.Addr(leader))
	w := testutil.Connect(t, ens.Addr(f), framework.WithSessionTimeout(60*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "create" || op == "sync" {
				signal(progressed)
			}
		}),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "getChildren" && r.Err == nil {
				signal(listed)
			}
		}))
	ctx := testutil.Context(t, 2*time.Minute)

	m1, m2 := newMember(t, x, path, 2), newMember(t, x, path, 2)
	in1 := testutil.Go(ctx, m1.Enter)
	require.NoError(t, m2.Enter(ctx))
	require.NoError(t, testutil.Result(t, in1, 20*time.Second, "m1's Enter"))
	require.Eventually(t, func() bool {
		st, err := w.Exists(ctx, path+"/ready")
		return err == nil && st != nil
	}, 20*time.Second, 20*time.Millisecond, "W's server has the round's ready")

	require.NoError(t, ens.Isolate(f))
	t.Cleanup(func() { _ = ens.HealPeers() })
	out1 := testutil.Go(ctx, m1.Leave)
	require.NoError(t, m2.Leave(ctx))
	require.NoError(t, testutil.Result(t, out1, 20*time.Second, "m1's Leave"))
	st, err := x.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.Nil(t, st, "the round's ready is gone")

	mw := newMember(t, w, path, 2)
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	entered := testutil.Go(ectx, mw.Enter)
	select {
	case <-progressed:
	case err := <-entered:
		t.Fatalf("W's Enter returned before it sent a create or a sync: %v", err)
	case <-ctx.Done():
		t.Fatal("W's Enter sent neither a create nor a sync")
	}
	require.NoError(t, ens.HealPeers())
	select {
	case err := <-entered:
		require.Error(t, err, "W went in alone (memberQty 2) by the last round's ready, read from its lagging server")
	case <-listed:
		cancel()
		require.ErrorIs(t, testutil.Result(t, entered, 20*time.Second, "W's cancelled Enter"), context.Canceled)
	case <-ctx.Done():
		t.Fatal("W's Enter neither returned nor listed the members")
	}
	assertNoMembers(t, ens.Addr(leader), path, w, x)
}
