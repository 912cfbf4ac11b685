package discovery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// The client gives its session up (a simulated Lost: cut off longer than it
// may assume the session lives) while the server still holds that session (here: for
// 40 s; after a lost quorum or a paused leader, the server re-arms every session's
// timeout). The instance's node is then this registration's own dead generation: once
// the client has its new session the registry must replace it at once, not keep it
// under the session given up until the server expires that session (the instance then
// vanishes from every provider until the keeper makes it again).
func TestDeadGenerationReplacedOnNewSession(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	const session = 40 * time.Second
	// Lost after 5 % of the session (2 s) cut off: the server keeps the session ~38 s more.
	c := testutil.ConnectFailFast(t, server.ConnectString(), framework.WithSessionTimeout(session),
		framework.WithSimulatedExpiry(0.05), framework.WithDialer(proxy.Dialer()))
	other := testutil.Connect(t, server.ConnectString())
	states := testutil.States(c)
	ctx := testutil.Context(t, 90*time.Second)
	regs := newRegistrations()
	d, err := discovery.New[details](c, "/disc/deadgen", discovery.WithRegistrationListener(regs.listen))
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "x", 1)))
	regs.wait(t, 10*time.Second)
	const path = "/disc/deadgen/svc/x"
	_, old := c.Session()
	t.Logf("negotiated session timeout %v", c.NegotiatedSessionTimeout())

	proxy.Refuse()
	proxy.DropConnections() // nothing reaches the server: no closeSession either
	testutil.WaitState(t, states, framework.Lost, 30*time.Second)
	cutAt := time.Now()
	// The client closes the session it gave up (closeSession waits up to 1 s for a
	// connection): let that pass while nothing gets through, so the server keeps it.
	time.Sleep(1500 * time.Millisecond)
	proxy.Heal()
	testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
	_, sid := c.Session()
	require.NotEqual(t, old, sid, "a new session after the simulated Lost")

	// The old session lives on the server until ~cutAt+38 s: the node must be this
	// session's well before (15 s is only slack for a loaded machine).
	var st *framework.Stat
	ok := assert.Eventually(t, func() bool {
		st, err = other.Exists(ctx, path)
		return err == nil && st != nil && st.EphemeralOwner == sid
	}, 15*time.Second, 10*time.Millisecond)
	if !ok {
		var owner int64
		if st != nil {
			owner = st.EphemeralOwner
		}
		t.Fatalf("15 s after the new session 0x%x, the instance's node is owned by 0x%x (the session given up: 0x%x, %v ago; err %v)",
			sid, owner, old, time.Since(cutAt).Round(time.Millisecond), err)
	}
	again := regs.wait(t, 10*time.Second)
	assert.True(t, again.Again, "the replacement is a re-registration")

	require.NoError(t, d.Close())
	gone, err := other.Exists(ctx, path)
	require.NoError(t, err)
	assert.Nil(t, gone, "Close deletes the instance's node")
}
