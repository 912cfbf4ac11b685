package framework_test

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// ACLForPath is the ACL a Create without one gives the node; a copy, so that appending an
// owner token's entry to it changes nothing for the client.
func TestACLForPath(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	assert.Equal(t, zk.WorldACL(zk.PermAll), c.ACLForPath("/a"))
	tok := framework.NewOwnerToken()
	acl := append(c.ACLForPath("/a"), tok.ACL())
	_, err := c.Transaction(ctx, framework.CreateOp("/acl-for", nil, framework.Persistent, acl))
	require.NoError(t, err)
	_, mine, err := c.OwnedBy(ctx, "/acl-for", tok)
	require.NoError(t, err)
	assert.True(t, mine)
	assert.Equal(t, zk.WorldACL(zk.PermAll), c.ACLForPath("/a"), "the provider's ACL is unchanged")
}
