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

// With a short session timeout go-zookeeper's read deadline (2/3 of it: 1 s here) is set
// before the gated read: held for the gate's whole second (auth + watches, see
// TestReviewGateStallsAuthenticatedReconnect), the read then times out, the connection
// drops again and the client reports the session Lost: one dropped TCP connection costs
// an authenticated client with a watch its session (its locks, its ephemeral nodes).
func TestReviewGateShortSessionAuthLosesSession(t *testing.T) {
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
