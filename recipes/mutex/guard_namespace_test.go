package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// A lease's guard used for a write through another client of the same ensemble whose
// namespace differs (locks under one namespace, data under another): the guard carries
// the lock node's path without its namespace, so the write's check looks for the node
// under the writing client's namespace, finds nothing, and the write is refused as
// ErrFenced ("the lease has ended") while the lease is held and its node exists.
func TestGuardAcrossNamespacesNotFencedWhileHeld(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 30*time.Second)
	locksC := testutil.Connect(t, srv.ConnectString(), framework.WithNamespace("locks"))
	dataC := testutil.Connect(t, srv.ConnectString(), framework.WithNamespace("data"))
	const target = "/value"
	_, err := dataC.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	m, err := mutex.New(locksC, "/guardns/ns-lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, lease.Release(ctx)) }()
	g, err := lease.Guard(ctx)
	require.NoError(t, err)

	require.NoError(t, setGuarded(ctx, dataC, g, target, "held"),
		"a write under a held lease's guard, through a client of another namespace, was refused")
	requireData(t, dataC, target, "held")
}
