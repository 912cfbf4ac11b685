package doublebarrier_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// An Enter whose context is cancelled after another member counted its node and went in
// is not told that it is out. a (memberQty 2) waits with its node; the server's replies
// to a's client are held, so that a does not hear of ready yet; b counts a's node, makes
// ready and goes in; then a's context is cancelled. The barrier opened with a counted,
// before the context ended: b is inside counting a, and b's Leave waits for a's node.
// Enter's doc says that a cancelled Enter returns the context's error when "the member
// was never counted"; here it was. Enter must say in (nil, as a member whose own create
// of ready was applied is) or say that the member was counted (an error that carries
// more than context.Canceled): a bare context.Canceled tells a's caller it is out while
// b went in with it.
func TestEnterCancelledAfterItWasCountedIsNotOut(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var healOnDelete atomic.Bool
	listed := make(chan struct{}, 1)
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "getChildren" && r.Err == nil {
				select {
				case listed <- struct{}{}: // a listed the members (one of 2): it waits for ready
				default:
				}
			}
		}),
		framework.WithRequestHook(func(op string) {
			if op == "delete" && healOnDelete.CompareAndSwap(true, false) {
				proxy.Heal() // a's withdrawal gets through: its outcome is known
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	const path = "/counted/cancelled"
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

	healOnDelete.Store(true)
	cancel()
	err = testutil.Result(t, entered, 20*time.Second, "a's cancelled Enter")
	if err == nil {
		require.NoError(t, a.Leave(ctx))
	}
	assert.False(t, onlyCanceled(err),
		"a's Enter said the member is out (%v: the context's error and nothing else) after b counted its node "+
			"(ready made after it) and went in", err)
	proxy.Heal()
	require.NoError(t, b.Leave(ctx))
	assertNoMembers(t, srv.ConnectString(), path, ca, other)
}
