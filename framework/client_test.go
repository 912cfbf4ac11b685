package framework_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestStatesServerStoppedAndBack(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewLocalServer(t)
	c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(2*time.Second),
		framework.WithConnectionTimeout(time.Second), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	rec := recordStates(c)
	require.NoError(t, c.Start())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntilConnected(ctx))
	rec.waitFor(t, 5*time.Second, framework.Connected)
	gen, sid := c.Session()
	assert.EqualValues(t, 1, gen)
	assert.NotZero(t, sid)
	lease := c.LossSignal(gen)

	require.NoError(t, srv.Stop())
	rec.waitFor(t, 10*time.Second, framework.Connected, framework.Suspended)
	select {
	case <-lease:
	case <-time.After(time.Second):
		t.Fatal("standard policy: a lease ends on Suspended")
	}
	rec.waitFor(t, 10*time.Second, framework.Connected, framework.Suspended, framework.Lost)
	assert.EqualValues(t, 2, c.Generation(), "Lost starts a new generation")

	require.NoError(t, srv.Restart(ctx))
	rec.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Lost, framework.Reconnected)
	_, err = c.Exists(ctx, "/")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	_, err = c.Exists(ctx, "/")
	assert.ErrorIs(t, err, framework.ErrClosed)
}

func TestStatesSessionExpiredThroughProxy(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond),
		framework.WithDialer(proxy.Dialer()), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	rec := recordStates(c)
	require.NoError(t, c.Start())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntilConnected(ctx))
	gen, sid := c.Session()
	_, err = c.Create(ctx, "/eph", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	proxy.Stall()
	// Wait until the server has really expired the session, then heal.
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sid]) == 0
	}, 20*time.Second, 50*time.Millisecond)
	rec.waitFor(t, 10*time.Second, framework.Connected, framework.Suspended, framework.Lost)
	proxy.Heal()
	rec.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Lost, framework.Reconnected)
	gen2, sid2 := c.Session()
	assert.NotEqual(t, sid, sid2, "a new session after expiry")
	assert.Greater(t, gen2, gen)
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended, framework.Lost, framework.Reconnected}, rec.get(),
		"Lost is reported once although both the timer and the server said so")
	st, err := c.Exists(ctx, "/eph")
	require.NoError(t, err)
	assert.Nil(t, st, "the expired session's ephemeral node is gone")
}

func TestStatesBriefDropKeepsSession(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, err := framework.New(proxy.ConnectString(), framework.WithSessionTimeout(4*time.Second),
		framework.WithErrorPolicy(framework.SessionErrorPolicy), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	rec := recordStates(c)
	require.NoError(t, c.Start())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntilConnected(ctx))
	gen, sid := c.Session()
	lease := c.LossSignal(gen)
	proxy.DropConnections()
	rec.waitFor(t, 10*time.Second, framework.Connected, framework.Suspended, framework.Reconnected)
	gen2, sid2 := c.Session()
	assert.Equal(t, sid, sid2)
	assert.Equal(t, gen, gen2)
	select {
	case <-lease:
		t.Fatal("session policy: a brief suspension does not end a lease")
	default:
	}
}

func TestSlowListenerDoesNotStallClient(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString())
	release := make(chan struct{})
	rec := recordStates(c)
	remove := c.AddListener(func(framework.State) { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proxy.DropConnections()
	// The client keeps working while the listener blocks.
	_, err := c.Create(ctx, "/while-listener-blocks", nil)
	require.NoError(t, err)
	proxy.DropConnections()
	_, err = c.Exists(ctx, "/")
	require.NoError(t, err)
	close(release)
	remove()
	rec.waitFor(t, 10*time.Second, framework.Suspended, framework.Reconnected, framework.Suspended, framework.Reconnected)
}

func TestCancelBlockedCall(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString())
	proxy.Stall()
	defer proxy.Heal()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := c.GetData(ctx, "/")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second, "a cancelled call returns promptly")
}

func TestNewRejectsBadArguments(t *testing.T) {
	for name, tc := range map[string]struct {
		connect string
		opts    []framework.Option
	}{
		"empty connect":       {connect: ""},
		"bad chroot":          {connect: "127.0.0.1:2181/a//b"},
		"zero session":        {connect: "h:1", opts: []framework.Option{framework.WithSessionTimeout(0)}},
		"negative connection": {connect: "h:1", opts: []framework.Option{framework.WithConnectionTimeout(-1)}},
		"nil retry":           {connect: "h:1", opts: []framework.Option{framework.WithRetryPolicy(nil)}},
		"bad namespace":       {connect: "h:1", opts: []framework.Option{framework.WithNamespace("a/../b")}},
		"empty acl":           {connect: "h:1", opts: []framework.Option{framework.WithACL(nil)}},
		"fraction":            {connect: "h:1", opts: []framework.Option{framework.WithSimulatedExpiry(1.5)}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := framework.New(tc.connect, tc.opts...)
			require.Error(t, err)
		})
	}
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	_, err = c.Exists(context.Background(), "/")
	assert.True(t, errors.Is(err, framework.ErrNotStarted), "got %v", err)
}
