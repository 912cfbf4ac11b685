package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// OwnerToken "marks the nodes that one instance of a recipe creates" (NewOwnerToken: "a
// fresh token, for one instance"), and WithOwnerToken promises: "A create that is sent
// again after a connection loss then finds the node its first attempt made, when it did,
// and returns it as created, instead of making a second node". An instance that made one
// sequential node with its token and then makes a second whose answer is lost must get
// its second node back, not the first (another create's node), leaving the second behind.
func TestOwnerTokenSequentialResendReturnsItsOwnNode(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	other := testutil.Connect(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := c.Create(ctx, "/owned", nil)
	require.NoError(t, err)
	tok := framework.NewOwnerToken()
	mode := framework.WithMode(framework.EphemeralSequential)

	first, err := c.Create(ctx, "/owned/n-", []byte("first"), mode, framework.WithOwnerToken(tok))
	require.NoError(t, err)

	var second string
	err = lostReply(t, proxy, func() error {
		var err error
		second, err = c.Create(ctx, "/owned/n-", []byte("second"), mode, framework.WithOwnerToken(tok))
		return err
	})
	require.NoError(t, err)
	kids, _, err := other.Children(ctx, "/owned")
	require.NoError(t, err)
	t.Logf("first create: %s; second create (answer lost, sent again): %s; nodes: %v", first, second, kids)
	require.Len(t, kids, 2, "the second create's first attempt was applied")
	assert.NotEqual(t, first, second, "the second create returned the first create's node as the one it made")
	data, _, err := other.GetData(ctx, second)
	require.NoError(t, err)
	assert.Equal(t, "second", string(data), "the node returned is not the one this create made")
}
