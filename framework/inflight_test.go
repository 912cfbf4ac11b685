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

// A create given up on while its request is held (the proxy stalls as it goes out) stays
// counted in its InFlight until its reply arrives: Wait returns only then, and a look sent
// after Wait sees the node the late create made.
func TestInFlightWaitsForGivenUpCreate(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(30*time.Second),
		framework.WithDialer(proxy.Dialer()), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	require.NoError(t, c.Start())
	defer c.Close()
	ctx := testCtx(t)
	require.NoError(t, c.BlockUntilConnected(ctx))

	var f framework.InFlight
	require.NoError(t, f.Wait(ctx), "nothing counted yet")
	assert.False(t, f.Pending(), "nothing counted yet")
	ctx1, cancel1 := context.WithCancel(ctx)
	defer cancel1()
	_, err = c.Create(ctx1, "/inflight", []byte("1"), framework.WithMode(framework.Ephemeral), framework.WithInFlight(&f),
		framework.WithOnSend(func() {
			proxy.Stall()
			cancel1()
		}))
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, f.Pending(), "the create given up on is held")
	waited := make(chan error, 1)
	go func() { waited <- f.Wait(ctx) }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned (%v) while the create's request is held", err)
	default:
	}
	proxy.Heal()
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("Wait did not return once the create was answered")
	}
	assert.False(t, f.Pending(), "answered")
	st, err := c.Exists(ctx, "/inflight")
	require.NoError(t, err)
	assert.NotNil(t, st, "a look sent after Wait is answered after the late create")
	require.NoError(t, c.Delete(ctx, "/inflight"))

	// A Wait whose context ends returns the context's error.
	ctx2, cancel2 := context.WithCancel(ctx)
	_, err = c.Create(ctx2, "/inflight2", nil, framework.WithMode(framework.Ephemeral), framework.WithInFlight(&f),
		framework.WithOnSend(func() {
			proxy.Stall()
			cancel2()
		}))
	require.ErrorIs(t, err, context.Canceled)
	ctx3, cancel3 := context.WithCancel(ctx)
	cancel3()
	require.ErrorIs(t, f.Wait(ctx3), context.Canceled)
	proxy.Heal()
	require.NoError(t, f.Wait(ctx))
	require.NoError(t, c.Delete(ctx, "/inflight2"))
}
