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

// requireLastLeaveReturns checks that the last member's Leave returns (nil) although c's
// node, made before the last member's transaction, is still there: c's Enter has not got
// in, and cannot by the ready the transaction deleted. It reports whether the Leave
// returned.
func requireLastLeaveReturns(t *testing.T, outLast <-chan error, connect, path string) bool {
	t.Helper()
	select {
	case err := <-outLast:
		assert.NoError(t, err, "the last member's Leave")
		return true
	case <-time.After(5 * time.Second):
		t.Errorf("the last member's Leave still waits, 5 s after its transaction, for a member node (children %v) "+
			"made before that transaction by a member whose Enter has not got in and will not by the ready it deleted",
			testutil.Children(t, connect, path))
		return false
	}
}

// The last member out does not wait for a member node made before its transaction whose
// Enter then finds ready gone. a and b (memberQty 2) leave; the lowest, the last, lists
// only its node, and before its transaction (its node and ready) is sent (the request
// hook), c begins to enter: c sees ready and makes its node, and its look at ready once
// its node is there (held by c's request observer until the transaction is applied)
// finds ready gone. c lists one member of 2 and waits: it is not in. The last member's
// Leave lists c's node, older than its transaction, and waits for it: it takes c for a
// member that entered by the round's ready, and Leave does not return while c waits.
func TestLeaveLastDoesNotWaitForMemberThatFoundReadyGone(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, time.Minute)
	const path = "/leavewaits/ready-gone"
	checker := testutil.ConnectFailFast(t, srv.ConnectString())

	var cArmed atomic.Bool
	var cNode atomic.Value
	cc := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestObserver(func(r framework.RequestInfo) {
		if r.Op != "create" || r.Err != nil || r.Path != cNode.Load() || !cArmed.CompareAndSwap(true, false) {
			return
		}
		// c's node is made: c looks at ready again only once the transaction is applied.
		waitFor(ctx, func() bool { return !exists(ctx, checker, path+"/ready") })
	}))
	c := newMember(t, cc, path, 2)
	cNode.Store(c.Node())
	cctx, cancelC := context.WithCancel(ctx)
	defer cancelC()

	var armed atomic.Bool
	cIn := make(chan error, 1)
	ab := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op != "multi" || !armed.CompareAndSwap(true, false) {
			return
		}
		cArmed.Store(true)
		go func() { cIn <- c.Enter(cctx) }()
		waitFor(ctx, func() bool { return exists(ctx, checker, c.Node()) })
	}))
	a, b := newMember(t, ab, path, 2), newMember(t, ab, path, 2)
	in := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-in)

	last, first := lowestFirst(a, b)
	armed.Store(true)
	outFirst, outLast := testutil.Go(ctx, first.Leave), testutil.Go(ctx, last.Leave)
	waitChildren(t, srv.ConnectString(), path, 1) // c's node: the transaction is applied
	require.True(t, exists(ctx, checker, c.Node()))
	testutil.NotYet(t, cIn, 500*time.Millisecond, "c's Enter, one member of 2 and no ready")
	returned := requireLastLeaveReturns(t, outLast, srv.ConnectString(), path)

	cancelC()
	require.ErrorIs(t, testutil.Result(t, cIn, 20*time.Second, "c's cancelled Enter"), context.Canceled)
	require.NoError(t, testutil.Result(t, outFirst, 20*time.Second, "the first member's Leave"))
	if !returned {
		select {
		case <-outLast:
		case <-time.After(20 * time.Second):
			t.Fatal("the last member's Leave does not return once c's node is gone")
		}
	}
	assertNoMembers(t, srv.ConnectString(), path, ab, cc, checker)
}

// The last member out does not wait for a member node made before its transaction by a
// member whose Enter has not looked at ready since: it is cut off just after its node
// was made (its connection stalls), and will find ready gone when it looks. As above,
// but c's client hears nothing once c's create is answered.
func TestLeaveLastDoesNotWaitForMemberStillEntering(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, time.Minute)
	const path = "/leavewaits/still-entering"
	checker := testutil.ConnectFailFast(t, srv.ConnectString())
	proxy := zktest.NewProxy(t, srv.ConnectString())

	var cArmed atomic.Bool
	var cNode atomic.Value
	cc := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "create" && r.Err == nil && r.Path == cNode.Load() && cArmed.CompareAndSwap(true, false) {
				proxy.Stall() // c's node is made; c's next look at ready waits in the network
			}
		}))
	c := newMember(t, cc, path, 2)
	cNode.Store(c.Node())
	cctx, cancelC := context.WithCancel(ctx)
	defer cancelC()

	var armed atomic.Bool
	cIn := make(chan error, 1)
	ab := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op != "multi" || !armed.CompareAndSwap(true, false) {
			return
		}
		cArmed.Store(true)
		go func() { cIn <- c.Enter(cctx) }()
		waitFor(ctx, func() bool { return exists(ctx, checker, c.Node()) })
	}))
	a, b := newMember(t, ab, path, 2), newMember(t, ab, path, 2)
	in := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-in)

	last, first := lowestFirst(a, b)
	armed.Store(true)
	outFirst, outLast := testutil.Go(ctx, first.Leave), testutil.Go(ctx, last.Leave)
	waitChildren(t, srv.ConnectString(), path, 1) // c's node: the transaction is applied
	require.True(t, exists(ctx, checker, c.Node()))
	returned := requireLastLeaveReturns(t, outLast, srv.ConnectString(), path)

	proxy.Heal()
	testutil.NotYet(t, cIn, 500*time.Millisecond, "c's Enter, one member of 2 and no ready")
	cancelC()
	require.ErrorIs(t, testutil.Result(t, cIn, 20*time.Second, "c's cancelled Enter"), context.Canceled)
	require.NoError(t, testutil.Result(t, outFirst, 20*time.Second, "the first member's Leave"))
	if !returned {
		select {
		case <-outLast:
		case <-time.After(20 * time.Second):
			t.Fatal("the last member's Leave does not return once c's node is gone")
		}
	}
	assertNoMembers(t, srv.ConnectString(), path, ab, cc, checker)
}
