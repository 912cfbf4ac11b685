package framework_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A failed transaction says which op failed and why; the others read as rolled back.
func TestTransactionErrorNamesFailedOp(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	res, err := c.Transaction(ctx,
		framework.CreateOp("/u", nil, framework.Persistent, nil),
		framework.DeleteOp("/missing", -1),
		framework.CreateOp("/w", nil, framework.Persistent, nil))
	require.Error(t, err)
	assert.ErrorIs(t, err, framework.ErrNoNode)
	var te *framework.TxnError
	require.True(t, errors.As(err, &te), "a *TxnError: %v", err)
	assert.Equal(t, 1, te.Index)
	assert.Contains(t, err.Error(), "op 1")
	assert.Contains(t, err.Error(), "/missing")
	require.Len(t, res, 3)
	assert.ErrorIs(t, res[1].Err, framework.ErrNoNode)
	for _, i := range []int{0, 2} {
		assert.ErrorIs(t, res[i].Err, framework.ErrRolledBack, "op %d", i)
		assert.NotContains(t, res[i].Err.Error(), "unknown error", "op %d", i)
	}
}
