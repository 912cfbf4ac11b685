package groupmember_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// The package doc: "A Close during a connection outage hands the delete of the member's
// node (bound to the czxid it was created with) to the client's guaranteed-delete worker,
// which deletes it once the connection is back; the client's WaitGuaranteedDeletes waits
// for it."
//
// Someone deletes the member's node; the member makes it again, the server applies that
// create, but its reply is lost with the connection and the client cannot reconnect for
// a while (the session lives on). The member leaves (Close) during that outage. Once the
// connection is back and WaitGuaranteedDeletes returned, the member's node must be gone:
// otherwise the closed member stays in everyone's CurrentMembers for as long as its client
// lives.
func TestCloseDuringOutageAfterRecreateLeavesGroup(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	t.Cleanup(proxy.Heal)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)
	const g = "/services/recreate-outage"
	m := join(t, c, g, "a", "payload")
	first, err := other.Exists(ctx, g+"/a")
	require.NoError(t, err)
	require.NotNil(t, first)

	proxy.DropNextCreateReply()
	proxy.Refuse()
	require.NoError(t, other.Delete(ctx, g+"/a"))
	var again *framework.Stat
	require.Eventually(t, func() bool {
		again, err = other.Exists(ctx, g+"/a")
		return err == nil && again != nil
	}, 20*time.Second, 10*time.Millisecond, "the member did not make its node again")
	require.Equal(t, c.SessionID(), again.EphemeralOwner, "the member's own node, of its session")

	closeErr := m.Close()
	t.Logf("Close during the outage: %v", closeErr)
	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.NoError(t, c.Sync(ctx, g))
	require.Empty(t, testutil.Children(t, srv.ConnectString(), g),
		"the closed member is still in the group (its re-created node left) after the connection came back")
}
