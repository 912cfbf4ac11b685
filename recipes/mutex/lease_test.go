package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// A release that hands the node over to a local waiter (the local queue, on by default)
// decides on a read: "when a lease is released, the next local waiter gets the lock
// without a new node if no other process is waiting" (WithLocalQueue). That read must not
// rest on a stale server (REFERENCE.md, Consuming and owning: "A release or an admission
// never rests on a stale read"). Here a holds the lock through a follower, its goroutine
// a2 waits in the local queue; the follower is cut off from its peers, and a's node is
// deleted by someone else at the quorum, so that b, through the leader, gets the lock.
// The cut-off follower still answers from its old state (a's node there, alone) until it
// notices the cut (syncLimit): a's release must not hand that node to a2 while b holds
// the lock.
func TestReleaseHandsOverLocallyOnlyOnFreshRead(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3, zktest.WithPeerProxies())
	t.Cleanup(func() { _ = ens.HealPeers() })
	leader, err := ens.Leader()
	require.NoError(t, err)
	f := (leader + 1) % ens.Size()
	proxy := zktest.NewProxy(t, ens.Addr(f))
	lead := testutil.Connect(t, ens.Addr(leader))
	lagging := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(40*time.Second),
		framework.WithConnectionTimeout(60*time.Second))
	ctx := testutil.Context(t, 2*time.Minute)
	const path = "/lagging/handover"

	ma := newMutex(t, lagging, path)
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	a2 := goAcquire(ctx, ma)
	require.Eventually(t, func() bool { return ma.LocalWaiters() == 1 }, 10*time.Second, 5*time.Millisecond, "a2 does not queue locally")
	// The follower has a's node (a got the lock through it).
	require.NoError(t, ens.Isolate(f))
	require.NoError(t, lead.Delete(ctx, la.Node()))
	mb := newMutex(t, lead, path)
	bctx, bcancel := context.WithTimeout(ctx, 10*time.Second)
	defer bcancel()
	lb, err := mb.Acquire(bctx)
	require.NoError(t, err, "b, through the leader, once a's node is gone")

	relErr := la.Release(ctx)
	t.Logf("a's release: %v", relErr)
	select {
	case r := <-a2:
		if r.err == nil {
			t.Errorf("a2 got the lock (node %s) while b holds it (node %s): a's node was handed over on the cut-off follower's stale listing", r.l.Node(), lb.Node())
		} else {
			t.Logf("a2: %v", r.err)
		}
		heal(t, ens)
		rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer rcancel()
		t.Logf("b's release: %v", lb.Release(rctx))
		if r.err == nil {
			t.Logf("a2's release: %v", r.l.Release(rctx))
		}
		return
	case <-time.After(2 * time.Second):
	}
	heal(t, ens)
	require.NoError(t, lb.Release(ctx))
	select {
	case r := <-a2:
		if r.err == nil {
			require.NoError(t, r.l.Release(ctx))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a2 did not return after b let go")
	}
}

// heal ends every cut between the ensemble's members and waits for a leader.
func heal(t *testing.T, ens *zktest.Ensemble) {
	t.Helper()
	require.NoError(t, ens.HealPeers())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := ens.WaitLeader(ctx)
	require.NoError(t, err)
}

// Within a local batch (WithLocalBatch) a release hands the node to the next local
// waiter without any read. The node may be gone by then: deleted by someone else, whose
// delete event the holder has not heard yet (its server's replies held on the way), with
// another process now holding the lock. The hand-over is an admission, and it must not
// rest on what the holder last heard (REFERENCE.md: "A release or an admission never
// rests on a stale read"; README: a lock node deleted by someone else while held ends
// the lease lost, and "the mutex's local queue never hands such a holding on").
func TestReleaseWithinLocalBatchHandsOverOnlyAnExistingNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	a := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second))
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	const path = "/locks/batch-handover"
	ma := newMutex(t, a, path, mutex.WithLocalBatch(2))
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	a2 := goAcquire(ctx, ma)
	require.Eventually(t, func() bool { return ma.LocalWaiters() == 1 }, 10*time.Second, 5*time.Millisecond, "a2 does not queue locally")

	proxy.HoldReplies() // a hears nothing more for now: its node's delete event waits
	require.NoError(t, other.Delete(ctx, la.Node()))
	mb := newMutex(t, other, path)
	lb, err := mb.Acquire(ctx)
	require.NoError(t, err, "b, once a's node is gone")

	relCtx, relCancel := context.WithTimeout(ctx, 3*time.Second)
	defer relCancel()
	t.Logf("a's release: %v", la.Release(relCtx))
	select {
	case r := <-a2:
		if r.err == nil {
			t.Errorf("a2 got the lock (node %s, deleted by someone else) while b holds it (node %s)", r.l.Node(), lb.Node())
			proxy.Heal()
			t.Logf("a2's release: %v", r.l.Release(ctx))
		} else {
			t.Logf("a2: %v", r.err)
			proxy.Heal()
		}
		require.NoError(t, lb.Release(ctx))
		return
	case <-time.After(2 * time.Second):
	}
	proxy.Heal()
	require.NoError(t, lb.Release(ctx))
	select {
	case r := <-a2:
		if r.err == nil {
			require.NoError(t, r.l.Release(ctx))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a2 did not return after b let go")
	}
}
