package persistentnode_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// The package doc: "Close during a create gives that create up, waits for its answer (or
// its connection's loss; at most 10 s) and then looks for the node it may have made ...,
// so a late create cannot leave the node behind, in every mode. Close during a connection
// outage hands the delete of a node this Node made ... to the client's guaranteed-delete
// worker". Node.Close: "deletes it when it is provably this Node's own: it carries this
// Node's ... owner token ..., also when it was made by a create that was still in flight
// when Close stopped waiting for it".
//
// Someone deletes the Node's (persistent) node; the Node makes it again, and the server
// applies that re-creation, but its reply is lost with the connection, and the client
// cannot reconnect (an outage). Close now: its look fails, and the delete it hands to the
// background is bound to the czxid of the node the Node had before, not to the one its
// re-creation made. Once the connection is back and the background deletes are done, the
// re-created node (carrying the Node's token) must be gone.
func TestCloseDuringOutageDeletesRecreatedNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	t.Cleanup(proxy.Heal)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)
	const path = "/pn/recreate-outage"
	n, err := persistentnode.New(c, path, []byte("mine"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	require.NoError(t, n.Start())
	t.Cleanup(func() { _ = n.Close() })
	require.NoError(t, n.WaitForInitialCreate(ctx))
	first, err := other.Exists(ctx, path)
	require.NoError(t, err)
	require.NotNil(t, first)

	// The next create's reply is lost with its connection, and no new connection is let in.
	proxy.DropNextCreateReply()
	proxy.Refuse()
	require.NoError(t, other.Delete(ctx, path))
	var again *framework.Stat
	require.Eventually(t, func() bool {
		again, err = other.Exists(ctx, path)
		return err == nil && again != nil
	}, 20*time.Second, 10*time.Millisecond, "the Node did not make its node again")
	require.NotEqual(t, first.Czxid, again.Czxid)

	closeErr := n.Close() // the re-creation given up on; the look fails (no connection)
	t.Logf("Close during the outage: %v", closeErr)
	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.NoError(t, c.Sync(ctx, path))
	left, err := other.Exists(ctx, path)
	require.NoError(t, err)
	if left != nil {
		acl, _, err := other.GetACL(ctx, path)
		require.NoError(t, err)
		t.Logf("left node's ACL (the Node's owner token is the zoocurator-owner entry): %v", acl)
		t.Errorf("the node the Node's re-creation made (czxid %#x; the Node had %#x) is left after Close, the connection back and the background deletes done", left.Czxid, first.Czxid)
	}
}
