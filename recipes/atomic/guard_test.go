package atomic_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// Increments, sets and the first create under a lease's guard pass while the lock is
// held and are refused by the server once it is released (a guard without the client's
// check) and by the client (the lease's own guard); unguarded, they are applied.
func TestGuardedCounter(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	m, err := mutex.New(c, "/guard/atomic-lock")
	require.NoError(t, err)
	n, err := atomic.NewLong(c, "/guard/atomic/new/parents/counter") // no node, no parents yet
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	g, err := lease.Guard(ctx)
	require.NoError(t, err)
	held := framework.WithGuard(ctx, g)
	late := framework.WithGuard(ctx, framework.NewGuard(g.Path(), g.Czxid(), nil))

	r, err := n.Increment(held) // the guarded create, parents made first
	require.NoError(t, err)
	require.True(t, r.Succeeded)
	require.EqualValues(t, 1, r.Post)
	r, err = n.Add(late, 2)
	require.NoError(t, err)
	require.EqualValues(t, 3, r.Post)
	require.NoError(t, n.ForceSet(held, 10))
	ok, err := n.CompareAndSet(held, 10, 11)
	require.NoError(t, err)
	require.True(t, ok.Succeeded)
	require.NoError(t, lease.Release(ctx))

	_, err = n.Increment(late)
	require.ErrorIs(t, err, framework.ErrFenced, "refused by the server")
	_, err = n.Increment(held)
	require.ErrorIs(t, err, framework.ErrFenced, "refused before sending")
	require.ErrorIs(t, n.ForceSet(late, 99), framework.ErrFenced)
	_, err = n.CompareAndSet(late, 11, 99)
	require.ErrorIs(t, err, framework.ErrFenced)
	_, err = n.TrySet(late, 99)
	require.ErrorIs(t, err, framework.ErrFenced)
	r, err = n.Get(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 11, r.Post, "a fenced write was applied")

	// A missing node: the guarded create is refused too.
	fresh, err := atomic.NewInt(c, "/guard/atomic/fresh")
	require.NoError(t, err)
	_, err = fresh.Increment(late)
	require.ErrorIs(t, err, framework.ErrFenced)
	st, err := c.Exists(ctx, "/guard/atomic/fresh")
	require.NoError(t, err)
	require.Nil(t, st)

	// Negative control: unguarded, the late increment is applied.
	r, err = n.Increment(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 12, r.Post)
}
