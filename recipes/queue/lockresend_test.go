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

// A consumer whose lock create was applied but answered only by a resend ("node exists")
// and whose context ended before it could read whose lock node that is leaves nothing
// locked: the lock node, its own, goes (as the lock node of a create given up does, in
// the background), and another consumer takes the item. Left, it would hold the item for
// as long as the consumer's session lives.
func TestLockCreateResentThenCancelledLeavesNoLockNode(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var created, armed atomic.Bool
	var cancelTake atomic.Pointer[context.CancelFunc]
	c := testutil.Connect(t, proxy.ConnectString(),
		framework.WithRequestHook(func(op string) {
			switch {
			case !armed.Load():
			case op == "create":
				created.Store(true)
			case op == "getData" && created.Load():
				if f := cancelTake.Swap(nil); f != nil {
					(*f)() // the context ends before the lock node is read
				}
			}
		}))
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/lockresend")
	t.Cleanup(func() { _ = other.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	_, err = q.Put(ctx, "warm-up")
	require.NoError(t, err)
	require.NoError(t, q.ConsumeOne(ctx, func(context.Context, string) error { return nil })) // the lock path is made
	_, err = q.Put(ctx, "x")
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cancelTake.Store(&cancel)
	proxy.DropNextCreateReply() // the lock node is made; the answer is lost
	armed.Store(true)
	var ran atomic.Int32
	err = q.ConsumeOne(cctx, func(context.Context, string) error { ran.Add(1); return nil })
	armed.Store(false)
	t.Logf("ConsumeOne: %v", err)
	require.Error(t, err)
	assert.Zero(t, ran.Load(), "the handler ran")
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	locks, _, err := other.Children(ctx, base+"/locks")
	require.NoError(t, err)
	for _, l := range locks {
		st, err := other.Exists(ctx, base+"/locks/"+l)
		require.NoError(t, err)
		_, sid := c.Session()
		if st != nil {
			t.Logf("lock node %s: ephemeral owner %#x, the consumer's session %#x", l, st.EphemeralOwner, sid)
		}
	}
	assert.Empty(t, locks, "the consumer's lock node is left: the item stays locked while its session lives")

	oq, err := queue.New(other, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
	defer tcancel()
	var got string
	err = oq.ConsumeOne(tctx, func(_ context.Context, s string) error { got = s; return nil })
	assert.NoError(t, err, "another consumer could not take the item")
	assert.Equal(t, "x", got)
}
