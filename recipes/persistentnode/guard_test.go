package persistentnode_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// SetData under a semaphore lease's guard passes while the lease is held and is refused
// once it is released (by the server and by the client); the refused data are not what
// the Node writes later. Unguarded, the late write is applied.
func TestGuardedSetData(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const path = "/guard/pnode"
	n, err := persistentnode.New(c, path, []byte("v0"))
	require.NoError(t, err)
	sem, err := semaphore.New(c, "/guard/pnode-sem", 1)
	require.NoError(t, err)
	lease, err := sem.Acquire(ctx)
	require.NoError(t, err)
	g, err := lease.Guard(ctx)
	require.NoError(t, err)
	held := framework.WithGuard(ctx, g)
	late := framework.WithGuard(ctx, framework.NewGuard(g.Path(), g.Czxid(), nil))

	require.ErrorIs(t, n.SetData(held, []byte("early")), framework.ErrNoNode, "not created yet")
	require.NoError(t, n.Start())
	t.Cleanup(func() { _ = n.Close() })
	require.NoError(t, n.WaitForInitialCreate(ctx))
	require.NoError(t, n.SetData(held, []byte("v1")))
	require.Equal(t, "v1", string(n.Data()))
	require.NoError(t, lease.Release(ctx))

	require.ErrorIs(t, n.SetData(late, []byte("late")), framework.ErrFenced, "refused by the server")
	require.ErrorIs(t, n.SetData(held, []byte("late")), framework.ErrFenced, "refused before sending")
	require.Equal(t, "v1", string(n.Data()), "refused data became the node's data")
	data, _, err := c.GetData(ctx, path)
	require.NoError(t, err)
	require.Equal(t, "v1", string(data))

	// Negative control: unguarded, the late write is applied.
	require.NoError(t, n.SetData(ctx, []byte("late")))
	data, _, err = c.GetData(ctx, path)
	require.NoError(t, err)
	require.Equal(t, "late", string(data))
}

// TTLNode.SetData under a write lease's guard: passes while held, refused after release.
func TestGuardedTTLSetData(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const path = "/guard/ttl"
	n, err := persistentnode.NewTTL(c, path, time.Minute, []byte("v0"))
	require.NoError(t, err)
	require.NoError(t, n.Start())
	t.Cleanup(func() { _ = n.Close() })
	require.NoError(t, n.WaitForInitialCreate(ctx))
	rw, err := rwlock.New(c, "/guard/ttl-lock")
	require.NoError(t, err)
	lease, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	g, err := lease.Guard(ctx)
	require.NoError(t, err)
	late := framework.WithGuard(ctx, framework.NewGuard(g.Path(), g.Czxid(), nil))

	require.NoError(t, n.SetData(framework.WithGuard(ctx, g), []byte("v1")))
	require.NoError(t, lease.Release(ctx))
	require.ErrorIs(t, n.SetData(late, []byte("late")), framework.ErrFenced)
	require.ErrorIs(t, n.SetData(framework.WithGuard(ctx, g), []byte("late")), framework.ErrFenced)
	data, _, err := c.GetData(ctx, path)
	require.NoError(t, err)
	require.Equal(t, "v1", string(data))
	require.NoError(t, n.SetData(ctx, []byte("late"))) // negative control
	data, _, err = c.GetData(ctx, path)
	require.NoError(t, err)
	require.Equal(t, "late", string(data))
}
