package framework_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// WithMaxCzxid deletes only the node that transaction created: the same path created
// again (version 0 again) is another node, and stays.
func TestDeleteWithMaxCzxid(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, old, err := c.CreateStat(ctx, "/cz", nil)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, "/cz"))
	_, cur, err := c.CreateStat(ctx, "/cz", nil)
	require.NoError(t, err)
	require.Equal(t, old.Version, cur.Version)

	require.ErrorIs(t, c.Delete(ctx, "/cz", framework.WithMaxCzxid(old.Czxid)), framework.ErrNoNode)
	require.NoError(t, c.Delete(ctx, "/cz", framework.WithMaxCzxid(old.Czxid), framework.Quietly(), framework.Guaranteed()))
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	st, err := c.Exists(ctx, "/cz")
	require.NoError(t, err)
	require.NotNil(t, st, "the node created again is later than the bound")

	require.ErrorIs(t, c.Delete(ctx, "/cz", framework.WithMaxCzxid(cur.Czxid), framework.WithVersion(cur.Version+1)), framework.ErrBadVersion)
	require.ErrorIs(t, c.Delete(ctx, "/cz", framework.WithMaxCzxid(cur.Czxid), framework.WithChildren()), framework.ErrInvalidArgument)
	require.NoError(t, c.Delete(ctx, "/cz", framework.WithMaxCzxid(cur.Czxid)))
	st, err = c.Exists(ctx, "/cz")
	require.NoError(t, err)
	require.Nil(t, st)
}
