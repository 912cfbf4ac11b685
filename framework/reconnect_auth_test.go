package framework_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// With credentials (WithAuth) and a watch set, go-zookeeper v1.0.4 re-sends the auth after
// a reconnection and waits for its reply before its send loop starts; the set-watches
// request is queued behind it. The reconnect read gate holds that reply until the
// set-watches request is written: each waits for the other until the gate's 1 s timer.
// Every reconnection of an authenticated client with watches stalls for a second (no
// reply at all, pings included). Without auth the same round trip takes milliseconds.
func TestReconnectGateDoesNotStallAuthenticatedReconnect(t *testing.T) {
	for _, auth := range []bool{false, true} {
		name := map[bool]string{false: "no-auth", true: "auth"}[auth]
		t.Run(name, func(t *testing.T) {
			srv := zktest.NewServer(t)
			proxy := zktest.NewProxy(t, srv.ConnectString())
			opts := []framework.Option{framework.WithDialer(proxy.Dialer()), framework.WithSessionTimeout(30 * time.Second)}
			if auth {
				opts = append(opts, framework.WithAuth("digest", []byte("alice:secret")))
			}
			c := testutil.Connect(t, srv.ConnectString(), opts...)
			ctx := testCtx(t)
			_, _, err := c.ExistsW(ctx, "/watched")
			require.NoError(t, err)
			states := testutil.States(c)
			for round := 0; round < 2; round++ {
				proxy.DropConnections()
				testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
				start := time.Now()
				_, _, err = c.GetData(ctx, "/")
				require.NoError(t, err)
				took := time.Since(start)
				t.Logf("first read after the reconnection: %v", took)
				// The gate's timer makes the stall at least ~1 s minus the few ms between
				// the handshake and this read; 500 ms leaves a wide margin both ways.
				assert.Less(t, took, 500*time.Millisecond, "the first reply after an authenticated reconnection waits for the gate's timer")
			}
		})
	}
}

// With a short session timeout go-zookeeper's read deadline (2/3 of it: 1 s here) is set
// before the gated read: held for the gate's whole second (auth + watches, see
// TestReconnectGateDoesNotStallAuthenticatedReconnect), the read then times out, the connection
// drops again and the client reports the session Lost: one dropped TCP connection costs
// an authenticated client with a watch its session (its locks, its ephemeral nodes).
func TestReconnectGateKeepsShortAuthenticatedSession(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.Connect(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(1500*time.Millisecond), framework.WithAuth("digest", []byte("alice:secret")))
	ctx := testCtx(t)
	_, _, err := c.ExistsW(ctx, "/watched")
	require.NoError(t, err)
	sid := c.SessionID()
	var mu sync.Mutex
	var seen []framework.State
	c.AddListener(func(s framework.State) { mu.Lock(); seen = append(seen, s); mu.Unlock() })
	states := testutil.States(c)
	proxy.DropConnections()
	testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
	// Two round trips after the reconnection: the gated read has either been answered or
	// timed out by the time both are (the second waits for the connection to work).
	for i := 0; i < 2; i++ {
		_, _, err = c.GetData(ctx, "/")
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.NotContains(t, seen, framework.Lost, "states after one dropped connection: %v", seen)
	assert.Equal(t, sid, c.SessionID(), "the session survives one dropped connection")
}
