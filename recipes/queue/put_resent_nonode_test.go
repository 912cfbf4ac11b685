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

// A Put whose create was applied and whose reply was lost, then sent again, is reported
// with ErrMaybeTwice (Put's doc and ErrMaybeTwice's: "a Put whose create was sent again
// after a connection loss: the first attempt may have been applied too"). Here the first
// attempt was applied, its item consumed and the queue path deleted (a consumer emptied
// it and its owner removed it, or a container reaped) before the resend, which is
// answered NoNode; Put then makes the queue path again and creates the item once more.
// The item is queued a second time after it was delivered, and the Put must say that it
// may have been: a caller cannot tell this duplicate from a clean Put otherwise.
func TestPutResentAfterQueueRemovedReportsMaybeTwice(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/putresent")
	t.Cleanup(func() { _ = other.Delete(context.Background(), base, framework.WithChildren()) })
	qpath := base + "/q"

	var armed atomic.Bool
	var creates atomic.Int32
	hookErr := make(chan error, 1)
	delivered := make(chan string, 1)
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(40*time.Second),
		framework.WithRequestHook(func(op string) {
			if op != "create" || !armed.Load() {
				return
			}
			if creates.Add(1) != 2 {
				return
			}
			// The resend of the item's create, after its first attempt was applied and its
			// reply dropped: before it goes out, another consumer takes the item and the
			// queue path is deleted (it is empty). The hook runs on the Put's goroutine,
			// before the request is sent.
			hookErr <- func() error {
				oq, err := queue.New(other, qpath, queue.String{})
				if err != nil {
					return err
				}
				if err := oq.ConsumeOne(ctx, func(_ context.Context, s string) error {
					delivered <- s
					return nil
				}); err != nil {
					return err
				}
				return other.Delete(ctx, qpath)
			}()
		}))
	q, err := queue.New(c, qpath, queue.String{})
	require.NoError(t, err)
	// The queue path is made (and known made) by a first Put, whose item goes.
	warm, err := q.Put(ctx, "warm")
	require.NoError(t, err)
	require.NoError(t, other.Delete(ctx, warm))

	proxy.DropNextCreateReply() // the item's create is applied, its reply lost
	armed.Store(true)
	p, err := q.Put(ctx, "x")
	armed.Store(false)
	t.Logf("Put: %q, %v (creates sent: %d)", p, err, creates.Load())
	select {
	case herr := <-hookErr:
		require.NoError(t, herr, "the other consumer took the item and deleted the queue path")
	default:
		t.Fatal("the item's create was not sent again after its reply was lost")
	}
	require.Equal(t, "x", <-delivered, "the first attempt's item was delivered")
	kids, _, err2 := other.Children(ctx, qpath)
	require.NoError(t, err2)
	t.Logf("queue after the Put: %v", kids)
	require.Len(t, kids, 1, "the item is queued again, after it was delivered")
	assert.ErrorIs(t, err, queue.ErrMaybeTwice,
		"a Put whose create was applied, its reply lost and the create sent again reported %v: the item, delivered already, is queued again (%v) with no ErrMaybeTwice", err, kids)
}

// SimpleQueue.Offer goes the same way as Put: its create applied and its reply lost, the
// item taken and the queue path deleted before the resend, which is answered NoNode, and
// the item made again after the queue path: the Offer must report ErrMaybeTwice.
func TestOfferResentAfterQueueRemovedReportsMaybeTwice(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/offerresent")
	t.Cleanup(func() { _ = other.Delete(context.Background(), base, framework.WithChildren()) })
	qpath := base + "/q"

	var armed atomic.Bool
	var creates atomic.Int32
	hookErr := make(chan error, 1)
	delivered := make(chan string, 1)
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(40*time.Second),
		framework.WithRequestHook(func(op string) {
			if op != "create" || !armed.Load() || creates.Add(1) != 2 {
				return
			}
			// The resend of the item's create: before it goes out, another client takes
			// the item and deletes the (empty) queue path.
			hookErr <- func() error {
				oq, err := queue.NewSimple(other, qpath, queue.String{})
				if err != nil {
					return err
				}
				s, ok, err := oq.Poll(ctx)
				if err != nil {
					return err
				}
				if ok {
					delivered <- s
				}
				return other.Delete(ctx, qpath)
			}()
		}))
	q, err := queue.NewSimple(c, qpath, queue.String{})
	require.NoError(t, err)
	warm, err := q.Offer(ctx, "warm") // the queue path is made, and known made
	require.NoError(t, err)
	require.NoError(t, other.Delete(ctx, warm))

	proxy.DropNextCreateReply() // the item's create is applied, its reply lost
	armed.Store(true)
	p, err := q.Offer(ctx, "x")
	armed.Store(false)
	t.Logf("Offer: %q, %v (creates sent: %d)", p, err, creates.Load())
	select {
	case herr := <-hookErr:
		require.NoError(t, herr, "the other client took the item and deleted the queue path")
	default:
		t.Fatal("the item's create was not sent again after its reply was lost")
	}
	select {
	case s := <-delivered:
		require.Equal(t, "x", s, "the first attempt's item was taken")
	default:
		t.Fatal("the first attempt's item was not in the queue")
	}
	kids, _, err2 := other.Children(ctx, qpath)
	require.NoError(t, err2)
	require.Len(t, kids, 1, "the item is queued again, after it was taken")
	assert.ErrorIs(t, err, queue.ErrMaybeTwice,
		"an Offer whose create was applied, its reply lost and the create sent again reported %v: the item, taken already, is queued again (%v) with no ErrMaybeTwice", err, kids)
}
