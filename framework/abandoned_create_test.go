package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// lateCreate sends a create whose caller gives up before the reply: the proxy stalls as
// the request goes out and ctx is cancelled, so Create returns context.Canceled while the
// request waits in the proxy; Heal then lets it reach the server and its reply come back
// late, to the abandoned-create hook.
func lateCreate(t *testing.T, c *framework.Client, proxy *zktest.Proxy, path string, opts ...framework.CreateOption) {
	t.Helper()
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	var inFlight framework.InFlight
	opts = append(opts, framework.WithInFlight(&inFlight), framework.WithOnSend(func() {
		proxy.Stall()
		cancel1()
	}))
	_, err := c.Create(ctx1, path, []byte("1"), opts...)
	require.ErrorIs(t, err, context.Canceled)
	proxy.Heal()
	// WithOnSend fires before go-zookeeper queues the request: the caller's next request
	// could overtake it (seen once this session). Wait until the create was answered.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	require.NoError(t, inFlight.Wait(ctx2))
}

// A plain path's create that the caller gave up on stays when it succeeds late: a later
// call that found the node (NodeExists) relies on it.
func TestAbandonedPlainCreateStays(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(10*time.Second),
		framework.WithDialer(proxy.Dialer()), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	require.NoError(t, c.Start())
	defer c.Close()
	ctx := testCtx(t)
	require.NoError(t, c.BlockUntilConnected(ctx))

	lateCreate(t, c, proxy, "/barrier")
	_, err = c.Create(ctx, "/barrier", []byte("2"))
	require.ErrorIs(t, err, framework.ErrNodeExists, "the late create reached the server first")
	_, err = c.Exists(ctx, "/") // one more round trip: the late reply has been handled
	require.NoError(t, err)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	st, err := c.Exists(ctx, "/barrier")
	require.NoError(t, err)
	assert.NotNil(t, st, "the late create of a plain path must not be undone")
	require.NoError(t, c.Delete(ctx, "/barrier"))
}

// A sequential create that the caller gave up on is undone when it succeeds late: the
// server gave its name to this call alone.
func TestAbandonedSequentialCreateUndone(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(10*time.Second),
		framework.WithDialer(proxy.Dialer()), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	require.NoError(t, c.Start())
	defer c.Close()
	ctx := testCtx(t)
	require.NoError(t, c.BlockUntilConnected(ctx))
	require.NoError(t, c.EnsurePath(ctx, "/seq"))

	lateCreate(t, c, proxy, "/seq/n-", framework.WithMode(framework.PersistentSequential))
	// The late create reached the server (it may be undone already: the parent's child
	// version counts it either way).
	_, st, err := c.Children(ctx, "/seq")
	require.NoError(t, err)
	require.GreaterOrEqual(t, st.Cversion, int32(1), "the late create reached the server")
	require.Eventually(t, func() bool {
		if c.WaitGuaranteedDeletes(ctx) != nil {
			return false
		}
		kids, _, err := c.Children(ctx, "/seq")
		return err == nil && len(kids) == 0
	}, 20*time.Second, 10*time.Millisecond, "the late sequential node must be undone")
	require.NoError(t, c.Delete(ctx, "/seq"))
}
