package queue_test

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
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/zktest"
)

// A take whose context ended while its delete was in flight "waits up to 10 s" for the
// delete's answer (package doc, SimpleQueue.Take): that is its whole wait past the
// context. Here the answer comes 8 s after the context ended, and the read that follows
// the delete gets no answer: the take still returns within the 10 s (plus slack), not
// 10 s after the answer.
func TestTakeWaitsAtMostTenSecondsPastItsContext(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed, deleted atomic.Bool
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(40*time.Second),
		framework.WithRequestHook(func(op string) {
			switch {
			case op == "delete" && armed.CompareAndSwap(true, false):
				proxy.HoldReplies()
				deleted.Store(true)
			case op == "exists" && deleted.CompareAndSwap(true, false):
				proxy.Stall() // the read after the delete gets no answer
			}
		}))
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/takebound")
	t.Cleanup(func() { _ = other.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.NewSimple(c, base+"/q", queue.String{})
	require.NoError(t, err)
	_, err = q.Offer(ctx, "x")
	require.NoError(t, err)

	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, _, err := q.Poll(tctx)
		done <- err
	}()
	require.Eventually(t, func() bool {
		kids, _, err := other.Children(ctx, base+"/q")
		return err == nil && len(kids) == 0
	}, 30*time.Second, 10*time.Millisecond, "the take's delete is applied")
	cancel()
	ended := time.Now()
	time.Sleep(8 * time.Second) // within the 10 s the take waits for its delete's answer
	proxy.Heal()                // the answer comes: applied
	err = <-done
	late := time.Since(ended)
	proxy.Heal()
	t.Logf("Poll returned %v after its context ended: %v", late.Round(time.Millisecond), err)
	// One deadline returns at about 10 s; two bounds in a row (the defect) return at 18 s.
	// The 14 s bound leaves slack both ways for a loaded machine.
	assert.Less(t, late, 14*time.Second, "the take waited %v past its context (the doc: up to 10 s)", late.Round(time.Millisecond))
}
