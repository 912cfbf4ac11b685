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

// The reply to the create of a DynamicSequential instance's node is lost (the server
// applied it): the client's retry creates a second node. The instance must still have
// exactly one node, and nothing may be left once it is unregistered.
func TestSequentialCreateReplyLost(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	d, err := discovery.New[string](c, "/disc/ghost")
	require.NoError(t, err)
	defer d.Close()
	inst, err := discovery.NewInstance("svc", "p", discovery.WithID("seq-"), discovery.WithServiceType(discovery.DynamicSequential))
	require.NoError(t, err)

	// The service's node exists already: the next create is the instance's own.
	_, err = c.Create(ctx, "/disc/ghost/svc", nil, framework.WithParents())
	require.NoError(t, err)
	proxy.DropNextCreateReply()
	require.NoError(t, d.Register(ctx, inst))
	kids := testutil.Children(t, server.ConnectString(), "/disc/ghost/svc")
	assert.Len(t, kids, 1, "one node for one instance: %v", kids)
	for _, k := range kids {
		_, st, err := c.GetData(ctx, framework.JoinPath("/disc/ghost/svc", k))
		require.NoError(t, err)
		assert.Equal(t, c.SessionID(), st.EphemeralOwner)
	}
	require.NoError(t, d.Unregister(ctx, inst))
	testutil.RequireNoChildren(t, server.ConnectString(), "/disc/ghost/svc")
	require.NoError(t, c.Delete(ctx, "/disc/ghost/svc"))
}
