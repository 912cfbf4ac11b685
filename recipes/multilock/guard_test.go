package multilock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/zktest"
)

// A multi-lease's guard checks every part's node: a write passes while all are held, is
// refused by the server once one part's node is gone, and before sending once the
// multi-lease is released; unguarded, the write is applied.
func TestMultiLeaseGuard(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const target = "/guard/multi-value"
	_, err := c.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	ml, err := multilock.NewFromPaths(c, "/guard/multi/a", "/guard/multi/b")
	require.NoError(t, err)
	lease, err := ml.Acquire(ctx)
	require.NoError(t, err)
	g, err := lease.Guard(ctx)
	require.NoError(t, err)
	require.Len(t, g.Ops(), 2, "one check per lock")
	set := func(g framework.Guard, v string) error {
		_, err := c.GuardedTransaction(ctx, g, framework.SetDataOp(target, []byte(v), -1))
		return err
	}
	require.NoError(t, set(g, "held"))

	// One part's node goes (server side only: a guard on the nodes without the client's check).
	var serverOnly framework.Guard
	var paths []string
	for _, p := range lease.Parts() {
		n := p.(interface{ Node() string }).Node()
		paths = append(paths, n)
		serverOnly = serverOnly.And(framework.NewGuard(n, 0, nil))
	}
	require.NoError(t, c.Delete(ctx, paths[1]))
	require.ErrorIs(t, set(serverOnly, "late"), framework.ErrFenced)
	_ = lease.Release(ctx)
	require.ErrorIs(t, set(g, "late"), framework.ErrFenced)
	data, _, err := c.GetData(ctx, target)
	require.NoError(t, err)
	require.Equal(t, "held", string(data))
	_, err = c.Transaction(ctx, framework.SetDataOp(target, []byte("late"), -1)) // negative control
	require.NoError(t, err)
	_, err = lease.Guard(ctx)
	require.Error(t, err)
}
