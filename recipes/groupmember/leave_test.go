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
func TestCloseDuringOutageLeavesGroup(t *testing.T) {
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

// Two members of one id on one client: once the first leaves (its Close deletes the
// node), the second makes its own (doc.go), stays in the group, and its Close deletes it.
func TestSecondMemberTakesOverAfterFirstLeaves(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const g = "/services/takeover"
	first := join(t, c, g, "a", "first")
	st, err := other.Exists(ctx, g+"/a")
	require.NoError(t, err)
	require.NotNil(t, st)
	second := join(t, c, g, "a", "second")
	require.NoError(t, first.Close())
	var now *framework.Stat
	require.Eventually(t, func() bool {
		now, err = other.Exists(ctx, g+"/a")
		return err == nil && now != nil && now.Czxid != st.Czxid
	}, 20*time.Second, 20*time.Millisecond, "the second member did not make its own node after the first left")
	data, _, err := other.GetData(ctx, g+"/a")
	require.NoError(t, err)
	assert.Equal(t, "second", string(data))
	members, err := second.CurrentMembers()
	require.NoError(t, err)
	assert.Contains(t, members, "a")
	require.NoError(t, second.Close())
	testutil.RequireNoChildren(t, srv.ConnectString(), g)
}
