package sharedcount_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

// Set and TrySet under a leader term's guard pass while the latch leads and are refused
// once its leadership ended (the latch closed, its node gone): by the server (a guard
// without the client's check) and by the client (the term's own guard). Unguarded, the
// late write is applied.
func TestGuardedSetAndTrySet(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	sc, err := sharedcount.New(c, "/guard/sharedcount", 0)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { _ = sc.Close() })
	latch, err := leader.NewLatch(c, "/guard/sharedcount-leader", "a")
	require.NoError(t, err)
	require.NoError(t, latch.Start(ctx))
	require.NoError(t, latch.Await(ctx))
	term, err := latch.Term()
	require.NoError(t, err)
	g, err := term.Guard()
	require.NoError(t, err)
	require.Equal(t, term.Node(), g.Path())
	held := framework.WithGuard(ctx, g)
	late := framework.WithGuard(ctx, framework.NewGuard(g.Path(), g.Czxid(), nil))

	require.NoError(t, sc.Set(held, 1))
	v, err := sc.Get()
	require.NoError(t, err)
	require.NoError(t, sc.TrySet(late, v, 2))

	require.NoError(t, latch.Close())
	testutil.WaitClosed(t, term.Done(), 10*time.Second, "the term after Close")
	_, err = term.Guard()
	require.ErrorIs(t, err, leader.ErrLeadershipLost)
	require.ErrorIs(t, sc.Set(late, 3), framework.ErrFenced, "refused by the server")
	require.ErrorIs(t, sc.Set(held, 3), framework.ErrFenced, "refused before sending")
	v, err = sc.Get()
	require.NoError(t, err)
	require.ErrorIs(t, sc.TrySet(late, v, 3), framework.ErrFenced)
	require.ErrorIs(t, sc.TrySet(held, v, 3), framework.ErrFenced)
	data, _, err := c.GetData(ctx, "/guard/sharedcount")
	require.NoError(t, err)
	require.Equal(t, sharedcount.Encode(2), data, "a fenced write was applied")

	// Negative control: unguarded, the late write is applied.
	require.NoError(t, sc.TrySet(ctx, v, 3))
	data, _, err = c.GetData(ctx, "/guard/sharedcount")
	require.NoError(t, err)
	require.Equal(t, sharedcount.Encode(3), data)
}
