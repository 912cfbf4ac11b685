package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A guaranteed delete told NotEmpty returns it and queues nothing: the node stays when
// someone else empties it later.
func TestGuaranteedDeleteNotEmptyQueuesNothing(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/g/kid", nil, framework.WithParents())
	require.NoError(t, err)

	err = c.Delete(ctx, "/g", framework.Guaranteed())
	require.ErrorIs(t, err, framework.ErrNotEmpty)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	require.NoError(t, c.WaitGuaranteedDeletes(wctx), "a NotEmpty delete must not be queued")

	require.NoError(t, c.Delete(ctx, "/g/kid"))
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	st, err := c.Exists(ctx, "/g")
	require.NoError(t, err)
	assert.NotNil(t, st, "the parent stays: its delete was refused, not queued")
	require.NoError(t, c.Delete(ctx, "/g"))
}

// A versioned guaranteed delete keeps its version in the background: the node, changed
// since, stays (BadVersion ends the job).
func TestGuaranteedDeleteKeepsVersion(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/v", []byte("0"))
	require.NoError(t, err)
	_, err = c.SetData(ctx, "/v", []byte("1"), 0) // version 1 now
	require.NoError(t, err)

	cancelled, cancel := context.WithCancel(ctx)
	cancel() // the caller gave up: the delete goes to the background worker
	err = c.Delete(cancelled, "/v", framework.WithVersion(0), framework.Guaranteed())
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	st, err := c.Exists(ctx, "/v")
	require.NoError(t, err)
	assert.NotNil(t, st, "the background delete must keep version 0; the node is at version 1")
	require.NoError(t, c.Delete(ctx, "/v"))
}
