package queue_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// A ConsumeOne (with a lock path) whose context ends as its lock node's create goes
// out must leave no lock node: unlock looks (GetData) right away, and that look can be
// handed to the connection before the create (each request is sent from a goroutine of
// its own), find nothing, and the create is applied after it. The lock node, ephemeral,
// then stays for the victim session's life and no consumer ever gets the item. The
// order is forced, not left to timing: with GOMAXPROCS(1) the look's goroutine is the
// runtime's "runnext" when the consumer blocks, so it runs before the create's.
func TestCancelledLockCreateLeavesNoLockNode(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	var cancelNow atomic.Pointer[context.CancelFunc]
	hook := framework.WithRequestHook(func(op string) {
		if op == "create" {
			if f := cancelNow.Swap(nil); f != nil {
				(*f)()
			}
		}
	})
	victim := testutil.ConnectFailFast(t, srv.ConnectString(), hook)
	peer := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	base := fmt.Sprintf("/takeracelock/%d", time.Now().UnixNano())
	qp, lp := base+"/q", base+"/l"
	vq, err := queue.New(victim, qp, queue.String{}, queue.WithLockPath(lp))
	require.NoError(t, err)
	pq, err := queue.New(peer, qp, queue.String{}, queue.WithLockPath(lp))
	require.NoError(t, err)
	// Warm up: the queue and lock paths exist and are known to the victim.
	_, err = vq.Put(ctx, "warm")
	require.NoError(t, err)
	require.Equal(t, []string{"warm"}, consumeN(t, ctx, vq.ConsumeOne, 1))

	lost, cancelled := 0, 0
	for round := range 8 {
		_, err = pq.Put(ctx, "x")
		require.NoError(t, err)
		require.NoError(t, victim.Sync(ctx, "/"))
		cctx, cancel := context.WithCancel(ctx)
		cancelNow.Store(&cancel)
		prev := runtime.GOMAXPROCS(1)
		err = vq.ConsumeOne(cctx, func(context.Context, string) error { return nil })
		runtime.GOMAXPROCS(prev)
		cancel()
		cancelNow.Store(nil)
		if err == nil {
			continue // the take went through before the cancel was seen: next round
		}
		require.ErrorIs(t, err, context.Canceled)
		cancelled++
		require.NoError(t, victim.WaitGuaranteedDeletes(ctx))
		_, err = victim.Exists(ctx, "/") // behind whatever the victim sent
		require.NoError(t, err)
		require.NoError(t, peer.Sync(ctx, "/"))
		kids, _, err := peer.Children(ctx, lp)
		require.NoError(t, err)
		for _, k := range kids {
			st, err := peer.Exists(ctx, lp+"/"+k)
			require.NoError(t, err)
			if st != nil && st.EphemeralOwner == victim.SessionID() {
				lost++
				t.Logf("round %d: the cancelled ConsumeOne left its lock node %s/%s", round, lp, k)
			}
		}
		// The item is there for the taking.
		tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
		err = pq.ConsumeOne(tctx, func(context.Context, string) error { return nil })
		tcancel()
		if !assert.NoError(t, err, "round %d: the peer cannot take the item: the cancelled ConsumeOne's lock node holds it", round) {
			break
		}
	}
	t.Logf("%d of 8 ConsumeOne calls were cancelled at their lock create", cancelled)
	require.NotZero(t, cancelled, "no ConsumeOne was cancelled: the test checked nothing")
	assert.Zero(t, lost, "cancelled ConsumeOne calls left their lock node (the item is locked for the victim session's life)")
}

// A lone consumer of an id queue whose take loses its versioned delete to an
// IDQueue.Remove (the remove lands between its read and its delete: forced here by doing
// the Remove, synchronously, from the consumer's request hook as its delete goes out)
// must not take that for a race lost to another consumer and jump a random 0..1 nodes
// ahead (half the time it would take c before b). "Items are taken in put order" (IDQueue's doc), and
// there is no other consumer. 24 rounds: the jump passes them all with probability 2^-24.
func TestLoneIDConsumerKeepsOrderWhenRemoveWinsItsDelete(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	peer := testutil.Connect(t, srv.ConnectString())
	base := fmt.Sprintf("/takeraceorder/%d/q", time.Now().UnixNano())
	remover, err := queue.NewID(peer, base, queue.String{})
	require.NoError(t, err)
	var removeNow atomic.Pointer[string]
	hook := framework.WithRequestHook(func(op string) {
		if op == "delete" {
			if id := removeNow.Swap(nil); id != nil {
				n, err := remover.Remove(context.Background(), *id)
				if err != nil || n != 1 {
					panic(fmt.Sprint("remove ", *id, ": ", n, err))
				}
			}
		}
	})
	c := testutil.ConnectFailFast(t, srv.ConnectString(), hook)
	ctx := testutil.Context(t, 60*time.Second)
	q, err := queue.NewID(c, base, queue.String{})
	require.NoError(t, err)
	for round := range 24 {
		for _, id := range []string{"a", "b", "c", "d"} {
			_, err := q.Put(ctx, fmt.Sprint(id, round), id)
			require.NoError(t, err)
		}
		a := "a"
		removeNow.Store(&a) // a is removed as the consumer deletes it
		got := consumeN(t, ctx, q.ConsumeOne, 3)
		require.Nil(t, removeNow.Load(), "the consumer sent no delete")
		require.Equal(t, []string{fmt.Sprint("b", round), fmt.Sprint("c", round), fmt.Sprint("d", round)}, got,
			"round %d: a lone consumer took the items out of put order after a Remove won its delete", round)
	}
}
