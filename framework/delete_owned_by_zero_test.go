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

// OwnedBy: "deletes an ephemeral node of session sid only ... a node sid does not own is
// ErrNoNode". No node is an ephemeral node of session 0 (a persistent node's
// ephemeralOwner is 0; 0 is also what Client.SessionID returns before the first
// session): a delete OwnedBy(0) of another session's ephemeral node must not delete it.
func TestDeleteOwnedByZeroSessionKeepsOthersNode(t *testing.T) {
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	other := testutil.Connect(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := other.Create(ctx, "/others-ephemeral", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	before, err := other.Exists(ctx, "/others-ephemeral")
	require.NoError(t, err)
	require.NotZero(t, before.EphemeralOwner)

	err = c.Delete(ctx, "/others-ephemeral", framework.OwnedBy(0))
	t.Logf("delete OwnedBy(0) of a node of session 0x%x: %v", before.EphemeralOwner, err)
	assert.Error(t, err, "session 0 owns no node")
	st, err := other.Exists(ctx, "/others-ephemeral")
	require.NoError(t, err)
	assert.NotNil(t, st, "the delete bound to session 0 deleted another session's ephemeral node")
}
