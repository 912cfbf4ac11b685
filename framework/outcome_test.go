package framework_test

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

// A delete with AwaitOutcome whose context ends while it is in flight says whether it was
// applied: the server's answer, waited for after the context ended (nil: applied); an
// unknown outcome when the answer is lost or does not come within the bound; the
// context's error alone when the request never went out.
func TestDeleteAwaitOutcome(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var onDelete atomic.Pointer[func()]
	c := testutil.ConnectFailFast(t, proxy.ConnectString(),
		framework.WithSessionTimeout(30*time.Second), // held replies: no read timeout meanwhile
		framework.WithRequestHook(func(op string) {
			if op == "delete" {
				if f := onDelete.Swap(nil); f != nil {
					(*f)()
				}
			}
		}))
	peer := testutil.Connect(t, srv.ConnectString())
	ctx := testCtx(t)

	gone := func(p string) bool {
		st, err := peer.Exists(ctx, p)
		require.NoError(t, err)
		return st == nil
	}
	// start makes p, then deletes it with AwaitOutcome(d) (bound to its czxid) under a
	// context it returns the cancel of; the servers' replies are held once the delete
	// goes out.
	start := func(p string, d time.Duration) (<-chan error, context.CancelFunc) {
		_, st, err := c.CreateStat(ctx, p, nil)
		require.NoError(t, err)
		hold := func() { proxy.HoldReplies() }
		onDelete.Store(&hold)
		dctx, cancel := context.WithCancel(ctx)
		done := testutil.Go(dctx, func(dctx context.Context) error {
			return c.Delete(dctx, p, framework.WithMaxCzxid(st.Czxid), framework.AwaitOutcome(d))
		})
		require.Eventually(t, func() bool { return gone(p) }, 20*time.Second, 5*time.Millisecond, "the delete is applied")
		return done, cancel
	}

	t.Run("applied", func(t *testing.T) {
		done, cancel := start("/await-applied", time.Minute)
		defer cancel()
		cancel()
		testutil.NotYet(t, done, time.Second, "a delete whose answer is held") // waits for the answer
		proxy.Heal()
		assert.NoError(t, testutil.Result(t, done, 20*time.Second, "the delete"), "applied, though the context ended")
	})

	t.Run("answer lost", func(t *testing.T) {
		done, cancel := start("/await-lost", time.Minute)
		defer cancel()
		cancel()
		proxy.DropConnections()
		proxy.Heal()
		err := testutil.Result(t, done, 20*time.Second, "the delete")
		assert.ErrorIs(t, err, framework.ErrUnknownOutcome)
		assert.ErrorIs(t, err, context.Canceled)
		assert.True(t, gone("/await-lost"), "the applied delete was not sent again on a new node")
	})

	t.Run("bound", func(t *testing.T) {
		done, cancel := start("/await-bound", 200*time.Millisecond)
		defer cancel()
		cancel()
		err := testutil.Result(t, done, 20*time.Second, "the delete, its answer held past the bound")
		proxy.Heal()
		assert.ErrorIs(t, err, framework.ErrUnknownOutcome)
		assert.ErrorIs(t, err, context.Canceled)
	})

	t.Run("not sent", func(t *testing.T) {
		_, st, err := c.CreateStat(ctx, "/await-unsent", nil)
		require.NoError(t, err)
		dctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cancelNow := func() { cancel() } // before the request goes out
		onDelete.Store(&cancelNow)
		err = c.Delete(dctx, "/await-unsent", framework.WithMaxCzxid(st.Czxid), framework.AwaitOutcome(time.Minute))
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, framework.ErrUnknownOutcome, "not sent: not applied")
		_, err = c.Exists(ctx, "/") // behind anything the delete sent
		require.NoError(t, err)
		assert.False(t, gone("/await-unsent"), "the node is there")
	})

	t.Run("plain answers", func(t *testing.T) {
		_, st, err := c.CreateStat(ctx, "/await-plain", nil)
		require.NoError(t, err)
		err = c.Delete(ctx, "/await-plain", framework.WithVersion(st.Version+1), framework.AwaitOutcome(time.Minute))
		assert.ErrorIs(t, err, framework.ErrBadVersion)
		assert.NotErrorIs(t, err, framework.ErrUnknownOutcome)
		assert.NoError(t, c.Delete(ctx, "/await-plain", framework.AwaitOutcome(time.Minute)))
		err = c.Delete(ctx, "/await-plain", framework.AwaitOutcome(time.Minute))
		assert.ErrorIs(t, err, framework.ErrNoNode)
		assert.NotErrorIs(t, err, framework.ErrUnknownOutcome)
		assert.ErrorIs(t, c.Delete(ctx, "/x", framework.AwaitOutcome(time.Second), framework.WithChildren()), framework.ErrInvalidArgument)
	})
}

// AsRead deletes the node read at once (one request, where WithMaxCzxid reads first), at
// the version read; a resend after a lost answer reads first, and its NoNode is unknown.
func TestDeleteAsRead(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	ctx := testCtx(t)

	_, st, err := c.CreateStat(ctx, "/asread", nil)
	require.NoError(t, err)
	_, err = c.SetData(ctx, "/asread", []byte("x"), st.Version)
	require.NoError(t, err)
	require.ErrorIs(t, c.Delete(ctx, "/asread", framework.AsRead(st)), framework.ErrBadVersion, "written since the read")
	_, st, err = c.GetData(ctx, "/asread")
	require.NoError(t, err)
	before := c.Requests()
	require.NoError(t, c.Delete(ctx, "/asread", framework.AsRead(st), framework.AwaitOutcome(time.Second)))
	assert.Equal(t, uint64(1), c.Requests()-before, "the delete alone")

	_, st, err = c.CreateStat(ctx, "/asread", nil)
	require.NoError(t, err)
	err = lostReply(t, proxy, func() error { return c.Delete(ctx, "/asread", framework.AsRead(st)) })
	assert.ErrorIs(t, err, framework.ErrNoNode, "the resend found the node gone")
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome)
}
