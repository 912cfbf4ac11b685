package queue_test

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
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/zktest"
)

// A take whose delete the server applied and answered delivers the item, also when its
// context ended while the delete was in flight (package doc; REFERENCE.md: "applied →
// the caller gets the item"). The read of the queue path that follows the delete (to
// tell a queue made again) is stalled: that read cannot make the item, removed by this
// take's own delete and by nobody else, vanish undelivered. (Delivering it makes no
// second delivery in any case: were the queue made again, the item read was deleted with
// the old queue, never delivered.)
func TestAppliedTakeDeliversWhenTheQueueReadStalls(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed, deleted atomic.Bool
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(40*time.Second),
		framework.WithRequestHook(func(op string) {
			switch {
			case op == "delete" && armed.CompareAndSwap(true, false):
				proxy.HoldReplies() // the delete's answer is held until its context ended
				deleted.Store(true)
			case op == "exists" && deleted.CompareAndSwap(true, false):
				proxy.Stall() // the read after the delete gets no answer
			}
		}))
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/appliedtake")
	t.Cleanup(func() { _ = other.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.NewSimple(c, base+"/q", queue.String{})
	require.NoError(t, err)
	_, err = q.Offer(ctx, "x")
	require.NoError(t, err)

	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	armed.Store(true)
	type result struct {
		item string
		ok   bool
		err  error
	}
	done := make(chan result, 1)
	go func() {
		item, ok, err := q.Poll(tctx)
		done <- result{item, ok, err}
	}()
	require.Eventually(t, func() bool {
		kids, _, err := other.Children(ctx, base+"/q")
		return err == nil && len(kids) == 0
	}, 30*time.Second, 10*time.Millisecond, "the take's delete is applied")
	cancel()     // the take's context ends while its delete is in flight
	proxy.Heal() // its answer comes: applied
	r := <-done
	proxy.Heal()
	item, ok, err := r.item, r.ok, r.err
	t.Logf("Poll: %q %v %v", item, ok, err)
	left, _, lerr := other.Children(ctx, base+"/q")
	if !errors.Is(lerr, framework.ErrNoNode) { // a container: gone once emptied
		require.NoError(t, lerr)
	}
	require.Empty(t, left, "the take's delete was applied")
	assert.True(t, ok && item == "x", "the item whose delete the server applied (and answered) was not delivered: Poll returned %q, %v, %v", item, ok, err)
}
