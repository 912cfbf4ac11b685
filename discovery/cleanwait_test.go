package discovery_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// A Register that gives up while it waits for the cleanup of a failed Register of the same
// id says which registration it was and why, like every other error of Register, and
// still matches its context's error.
func TestRegisterWaitingForACleanupSaysSo(t *testing.T) {
	leakcheck.Check(t)
	// A Register cancelled with its create held: its cleanup waits for that create.
	h := cancelRegisterWithHeldCreate(t, "/disc/cleanwait")
	d, ctx := h.d, h.ctx

	// The same id with a context ended already: it can only wait for that cleanup, and gives up.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	err := d.Register(cctx, newInstance(t, "svc", "x", 2))
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "discovery: register x: waiting for an earlier registration's node to be removed")

	h.proxy.Heal()
	require.NoError(t, h.c.WaitGuaranteedDeletes(ctx))
	testutil.RequireNoChildren(t, h.server.ConnectString(), "/disc/cleanwait/svc")
}
