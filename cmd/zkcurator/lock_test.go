package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// A revoke whose holder did not let go within --wait says that the holder may not be
// revocable and how to start one that is.
func TestLockRevokeOfHolderNotRevocableSaysHow(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	m, err := mutex.New(c, "/cli/plain") // no revocation listener: it never lets go when asked
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)

	p := zkc(t, srv.ConnectString(), "lock", "revoke", lease.Node(), "--wait", "300ms")
	assert.Equal(t, exitTimeout, p.code)
	assert.Contains(t, p.stderr.String(), lease.Node()+" is still there after 300ms: its holder may not be revocable")
	assert.Contains(t, p.stderr.String(), "'zkcurator lock run --revocable'")

	require.NoError(t, lease.Release(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), "/cli/plain")
}
