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

// A simulated Lost ends that session: after the heal the client runs a new session and
// the lost session's ephemeral node is gone, as in Curator 5.
func TestSimulatedLostEndsSession(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	// Lost at 30 % of a 10 s session: the server still holds the session at the heal.
	c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(10*time.Second),
		framework.WithSimulatedExpiry(0.3), framework.WithConnectionTimeout(2*time.Second),
		framework.WithDialer(proxy.Dialer()), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	rec := recordStates(c)
	require.NoError(t, c.Start())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntilConnected(ctx))
	_, sid := c.Session()
	_, err = c.Create(ctx, "/holder", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	proxy.Stall()
	rec.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Lost)
	proxy.Heal()
	rec.waitFor(t, 30*time.Second, framework.Connected, framework.Suspended, framework.Lost, framework.Reconnected)

	_, newSid := c.Session()
	assert.NotEqual(t, sid, newSid, "a simulated Lost must end the session")
	deadline := time.After(30 * time.Second)
	for {
		st, ev, err := c.ExistsW(ctx, "/holder")
		require.NoError(t, err)
		if st == nil {
			break
		}
		require.NotEqual(t, newSid, st.EphemeralOwner)
		select {
		case <-ev.Done():
		case <-deadline:
			t.Fatalf("the lost session's ephemeral (owner 0x%x) still exists 30s after the heal; client session 0x%x", st.EphemeralOwner, newSid)
		}
	}
}
