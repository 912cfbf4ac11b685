package groupmember_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A member that leaves the group (Close) during a connection outage, on a client that
// stays open (its session lives on): once the connection is back and the client's
// WaitGuaranteedDeletes returned, the member's node must be gone. Otherwise the closed
// member stays in everyone's CurrentMembers for as long as the client lives.
func TestReview28CloseDuringOutageLeavesGroup(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second))
	ctx := testutil.Context(t, 120*time.Second)
	const g = "/services/outage"
	m := join(t, c, g, "a", "payload")
	proxy.Stall()
	closeErr := m.Close()
	t.Logf("Close during the outage: %v", closeErr)
	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.NoError(t, c.Sync(ctx, g))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), g),
		"the closed member is still in the group (its node left) after the connection came back")
}
