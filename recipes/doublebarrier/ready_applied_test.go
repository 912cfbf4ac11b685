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

// A member whose create of ready was applied is in, even when its context ends before
// the reply (REFERENCE.md: "A write that opens something for others is ours
// once applied"). With memberQty 2, B waits; A comes second and creates ready, whose
// reply the proxy holds (the server applied it); A's context then ends. B goes in by A's
// ready. A must not report failure and withdraw its member node: B would be inside alone.
func TestEnterWhoseReadyWasAppliedIsIn(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	const path = "/readyapplied/barrier"
	var creates atomic.Int32
	var sentAt atomic.Int64 // the proxy's forwarded count when A's ready create was sent
	a := testutil.Connect(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(30*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "create" && creates.Add(1) == 2 { // A's member node, then ready
				sentAt.Store(int64(proxy.Forwarded()))
				proxy.HoldReplies()
			}
		}))
	b := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)

	mb := newMember(t, b, path, 2)
	bIn := testutil.Go(ctx, mb.Enter)
	waitChildren(t, srv.ConnectString(), path, 1)

	ma := newMember(t, a, path, 2)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	aIn := testutil.Go(actx, ma.Enter)
	require.Eventually(t, func() bool { return creates.Load() == 2 && int64(proxy.Forwarded()) > sentAt.Load() },
		20*time.Second, time.Millisecond, "A's ready create did not reach the server")
	require.NoError(t, testutil.Result(t, bIn, 20*time.Second, "B's Enter"), "B goes in by A's ready")
	cancel()
	// A's answer is held: an Enter that gives up on it returns now; one that learns the
	// outcome waits for it, which comes once the proxy lets it through.
	var err error
	select {
	case err = <-aIn:
	case <-time.After(500 * time.Millisecond):
		proxy.Heal()
		err = testutil.Result(t, aIn, 20*time.Second, "A's Enter")
	}
	proxy.Heal()
	require.NoError(t, err, "A's ready was applied and let B in: A is in")
	kids := testutil.Children(t, srv.ConnectString(), path)
	require.Contains(t, kids, "ready")
	require.Len(t, kids, 3, "both member nodes stay while both are inside: %v", kids)

	bOut := testutil.Go(ctx, mb.Leave)
	require.NoError(t, ma.Leave(ctx))
	require.NoError(t, testutil.Result(t, bOut, 20*time.Second, "B's Leave"))
	assertNoMembers(t, srv.ConnectString(), path, a, b)
}
