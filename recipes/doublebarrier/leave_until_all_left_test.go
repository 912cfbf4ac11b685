package doublebarrier_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// The last member out does not return while a member that entered by the round's ready
// (after its listing, before its transaction) is still in, when the transaction's reply
// is lost. a and b (memberQty 2) leave; before the last one's transaction (its node and
// ready) is sent, c enters by ready. The transaction is applied, its reply is held, and
// the connection is cut: the client sends it again on reconnection, and that attempt
// fails on the member node, gone with the first. The last member then does not know its
// transaction's zxid, which is what tells it to wait for c: it must still not return
// before c leaves.
func TestLeaveLastWhoseReplyIsLostWaitsForMemberThatEntered(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	const path = "/lostreply/last"
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	c := newMember(t, other, path, 2)

	var armed atomic.Bool
	var multis atomic.Int32
	resent := make(chan struct{})
	cIn := make(chan error, 1)
	ab := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
		framework.WithRequestHook(func(op string) {
			if op != "multi" || !armed.CompareAndSwap(true, false) {
				return
			}
			cIn <- c.Enter(ctx) // c enters by the round's ready, the last member's node there
			proxy.HoldReplies()
		}),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if r.Op == "multi" && multis.Add(1) == 2 {
				close(resent) // the transaction sent again has its answer
			}
		}))
	a, b := newMember(t, ab, path, 2), newMember(t, ab, path, 2)
	in := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-in)

	last, first := lowestFirst(a, b)
	armed.Store(true)
	outFirst, outLast := testutil.Go(ctx, first.Leave), testutil.Go(ctx, last.Leave)
	require.NoError(t, testutil.Result(t, cIn, 20*time.Second, "c's Enter by the round's ready"))
	waitChildren(t, srv.ConnectString(), path, 1) // c's node: the transaction is applied
	proxy.DropConnections()                       // its reply is lost
	proxy.Heal()
	select {
	case <-resent:
	case <-time.After(20 * time.Second):
		t.Fatal("the last member's transaction was not sent again")
	}
	select {
	case err := <-outLast:
		require.NoError(t, c.Leave(ctx))
		t.Fatalf("the last member's Leave returned (%v) while c, which entered by the round's ready before the "+
			"transaction, was still in (its transaction's reply was lost)", err)
	case <-time.After(time.Second): // a negative check: the last member waits for c
	}
	require.NoError(t, c.Leave(ctx))
	require.NoError(t, testutil.Result(t, outLast, 20*time.Second, "the last member's Leave"))
	require.NoError(t, testutil.Result(t, outFirst, 20*time.Second, "the first member's Leave"))
	assertNoMembers(t, srv.ConnectString(), path, ab, other)
}

// No member returns from Leave before every member has at least started leaving, as the
// package doc says (Leave returns when no member node is left). a and b (memberQty 2)
// leave; before the last one's transaction is sent, c enters by the round's ready. The
// transaction deletes the last member's node and ready; the first member, whose node is
// gone, finds ready gone and returns, although c, a member of its round, is inside and
// has not begun to leave. (The doc also says that only the last member waits for one
// that entered by ready after its listing: the two sentences disagree; this test holds
// the first.)
func TestLeaveFirstWaitsForMemberThatEnteredBeforeTheLastTransaction(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, time.Minute)
	const path = "/startedleaving/first"
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	c := newMember(t, other, path, 2)
	var armed atomic.Bool
	cIn := make(chan error, 1)
	ab := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op == "multi" && armed.CompareAndSwap(true, false) {
			cIn <- c.Enter(ctx)
		}
	}))
	a, b := newMember(t, ab, path, 2), newMember(t, ab, path, 2)
	in := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-in)

	last, first := lowestFirst(a, b)
	armed.Store(true)
	outFirst, outLast := testutil.Go(ctx, first.Leave), testutil.Go(ctx, last.Leave)
	require.NoError(t, testutil.Result(t, cIn, 20*time.Second, "c's Enter by the round's ready"))
	waitChildren(t, srv.ConnectString(), path, 1) // c's node: the transaction is applied
	select {
	case err := <-outFirst:
		require.NoError(t, c.Leave(ctx))
		t.Fatalf("the first member's Leave returned (%v) while c, a member of its round (it entered by the round's ready), "+
			"was inside and had not begun to leave", err)
	case <-time.After(2 * time.Second): // a negative check: the first member waits for c
	}
	require.NoError(t, c.Leave(ctx))
	require.NoError(t, testutil.Result(t, outLast, 20*time.Second, "the last member's Leave"))
	require.NoError(t, testutil.Result(t, outFirst, 20*time.Second, "the first member's Leave"))
	assertNoMembers(t, srv.ConnectString(), path, ab, other)
}
