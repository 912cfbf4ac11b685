package doublebarrier_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestLeaveReadyDeleteRetrySparesNextRound: the last member's ready delete (with its
// node, in one transaction) is in flight when the connection drops; meanwhile the member
// node and this round's ready go (as if that request had been applied: the same
// transaction, sent by another client) and the next round makes its own ready. The
// foreground retry must not remove it.
func TestLeaveReadyDeleteRetrySparesNextRound(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	g := newGate()
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(g.hook), framework.WithRetryPolicy(testutil.FastRetry(t)))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/readydelete"
	b := newMember(t, c, path, 1)
	require.NoError(t, b.Enter(ctx))
	next := newMember(t, other, path, 1)
	stalled := make(chan struct{})
	g.onLeave("multi", 1, func() { proxy.Stall(); close(stalled) })
	left := testutil.Go(ctx, b.Leave)
	testutil.WaitClosed(t, stalled, 20*time.Second, "ready delete")
	_, err := other.Transaction(ctx, framework.DeleteOp(b.Node(), -1), framework.DeleteOp(path+"/ready", -1))
	require.NoError(t, err)
	require.NoError(t, next.Enter(ctx)) // the next round: a new ready
	st, err := other.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, st)
	proxy.DropConnections()
	proxy.Heal()
	require.NoError(t, testutil.Result(t, left, 30*time.Second, "Leave"))
	st2, err := other.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, st2, "the next round's ready (czxid %d) was deleted by the retried delete of the round before", st.Czxid)
	require.NoError(t, next.Leave(ctx))
}

// TestLeaveReadyDeleteDelayedSparesNextRound: the request by which the last member of a
// round (V) deletes ready is delayed in the network (held in a proxy, then let through on
// the same connection: not lost, not resent). Meanwhile the other member (P) does
// whatever its Leave does, and a member of a next round (N, quantity 1) enters: if it
// finds no ready, it makes its own. Whatever ready N's round made must survive V's
// request when it lands (a delete at version 0 cannot tell two rounds'
// ready apart). With the delete of ready in one transaction with V's own node, the ready
// present while V's node exists is the round's own: N then joins the round instead, and
// V's Leave waits for N.
func TestLeaveReadyDeleteDelayedSparesNextRound(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var (
		mu      sync.Mutex
		deletes int
		atReady func()
	)
	// V's request that deletes ready: a transaction, or (the recipe before it) the
	// second delete of V's Leave (its own node, then ready).
	hook := func(op string) {
		mu.Lock()
		var fn func()
		if op == "delete" {
			deletes++
		}
		if atReady != nil && (op == "multi" || (op == "delete" && deletes == 2)) {
			fn, atReady = atReady, nil
		}
		mu.Unlock()
		if fn != nil {
			fn()
		}
	}
	vc := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(hook),
		framework.WithSessionTimeout(30*time.Second)) // the connection outlives the hold
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/jobs/ready-delayed"

	// V must be the lowest of the two: the lowest is the last to go.
	v, p := newMember(t, vc, path, 2), newMember(t, other, path, 2)
	for v.Node() > p.Node() {
		v = newMember(t, vc, path, 2)
	}
	vIn, pIn := testutil.Go(ctx, v.Enter), testutil.Go(ctx, p.Enter)
	require.NoError(t, testutil.Result(t, vIn, 20*time.Second, "V's Enter"))
	require.NoError(t, testutil.Result(t, pIn, 20*time.Second, "P's Enter"))
	old, err := other.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, old, "the round's ready")

	stalled := make(chan struct{})
	mu.Lock()
	atReady = func() { proxy.Stall(); close(stalled) }
	mu.Unlock()
	accepted := proxy.Accepted()
	vLeft, pLeft := testutil.Go(ctx, v.Leave), testutil.Go(ctx, p.Leave)
	testutil.WaitClosed(t, stalled, 20*time.Second, "V's request deleting ready")

	// P does all it can while V's request is held: it deletes ready (the recipe before:
	// every member that saw no member node left deletes it), or it waits on V's node
	// (a watch on it: V's node is still there).
	require.Eventually(t, func() bool {
		st, err := other.Exists(ctx, path+"/ready")
		if err == nil && st == nil {
			return true
		}
		out, err := zktest.FourLetterWord(srv.Addr(), "wchp", 5*time.Second)
		return err == nil && slices.Contains(strings.Split(out, "\n"), v.Node())
	}, 20*time.Second, 20*time.Millisecond, "P neither deleted ready nor waits on V's node")

	// The next round: N enters, and makes its own ready if there is none.
	n := newMember(t, other, path, 1)
	require.NoError(t, n.Enter(ctx))
	cur, err := other.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, cur, "the ready N entered by")

	vNode := v.Node()
	proxy.Heal() // V's request lands late, on the same connection
	// V's Leave then waits for N, which entered by the round's ready before it landed.
	require.Eventually(t, func() bool {
		st, err := other.Exists(ctx, vNode)
		return err == nil && st == nil
	}, 30*time.Second, 20*time.Millisecond, "V's request did not land")
	require.Equal(t, accepted, proxy.Accepted(), "V kept its connection: its request was only delayed")
	require.NoError(t, other.Sync(ctx, path))
	st, err := other.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	if cur.Czxid > old.Czxid { // N's round made a ready of its own
		require.NotNil(t, st, "the next round's ready (czxid %d) was deleted by the delayed request of the round before (czxid %d)", cur.Czxid, old.Czxid)
	} else {
		require.Nil(t, st, "the round's ready, which N entered by, outlived V's request")
	}

	require.NoError(t, n.Leave(ctx))
	require.NoError(t, testutil.Result(t, vLeft, 30*time.Second, "V's Leave"))
	require.NoError(t, testutil.Result(t, pLeft, 30*time.Second, "P's Leave"))
	if st, err := other.Exists(ctx, path+"/ready"); err == nil && st != nil {
		require.NoError(t, other.Delete(ctx, path+"/ready"))
	}
	assertNoMembers(t, srv.ConnectString(), path, vc, other)
}
