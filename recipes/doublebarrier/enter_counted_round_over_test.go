package doublebarrier_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// A withdrawn Enter that was counted says so even when the round that counted it is over
// by the time it looks. a (memberQty 2) waits with its node; the replies to a's client
// are held, so that a does not hear of ready; b counts a's node, makes ready, goes in and
// leaves (it waits for a's node). a's context is cancelled: a withdraws its node (its
// transaction dates the delete), and b, no longer waiting, ends the round: ready goes.
// a looks at ready only after that (its request observer holds the answer to its
// withdrawal until ready is gone on the server). The package doc: "When the barrier
// opened after the member node was made and before it went (… the delete sets the node's
// data in the same transaction, whose zxid dates it), the others may have gone in
// counting this member: the error then matches ErrCountedBeforeWithdrawn too." b went in
// counting a; that b has since left does not undo it.
func TestEnterWithdrawnAfterCountedRoundEndedSaysItWasCounted(t *testing.T) {
	testutil.KnownDefect(t, "a round that counted the member and ended before its look after the delete leaves nothing on the server to tell (its ready is gone)")
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	const path = "/counted/round-over"
	checker := testutil.ConnectFailFast(t, srv.ConnectString())
	var withdrawing atomic.Bool
	listed := make(chan struct{}, 1)
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "multi" && withdrawing.Load() {
				proxy.Heal() // a's withdrawal gets through: its outcome is known
			}
		}),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			switch {
			case r.Op == "getChildren" && r.Err == nil:
				select {
				case listed <- struct{}{}: // a listed the members (one of 2): it waits for ready
				default:
				}
			case r.Op == "multi" && r.Err == nil && withdrawing.CompareAndSwap(true, false):
				// a's node is gone: b ends the round before a looks at ready.
				waitFor(ctx, func() bool { return !exists(ctx, checker, path+"/ready") })
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	a, b := newMember(t, ca, path, 2), newMember(t, other, path, 2)

	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	entered := testutil.Go(actx, a.Enter)
	testutil.WaitClosed(t, waitChan(listed), 20*time.Second, "a's Enter lists the members")
	waitChildren(t, srv.ConnectString(), path, 1) // a's node

	proxy.HoldReplies() // a hears nothing, ready's NodeCreated included
	require.NoError(t, b.Enter(ctx), "b, counting a's node")
	st, err := other.Exists(ctx, a.Node())
	require.NoError(t, err)
	require.NotNil(t, st, "a's node")
	rst, err := other.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, rst, "b's ready")
	require.Greater(t, rst.Czxid, st.Czxid, "ready is made after a's node: its maker counted a")
	bLeft := testutil.Go(ctx, b.Leave) // waits for a's node

	withdrawing.Store(true)
	cancel()
	err = testutil.Result(t, entered, 20*time.Second, "a's cancelled Enter")
	if err == nil {
		require.NoError(t, a.Leave(ctx))
	}
	assert.True(t, err == nil || errors.Is(err, doublebarrier.ErrCountedBeforeWithdrawn),
		"a's Enter returned %v after b counted a's node and went in (ready made after a's node, before a withdrew it); "+
			"b has left since: the error must still match ErrCountedBeforeWithdrawn", err)
	proxy.Heal()
	require.NoError(t, testutil.Result(t, bLeft, 20*time.Second, "b's Leave"))
	assertNoMembers(t, srv.ConnectString(), path, ca, other)
}
