package framework_test

import (
	"context"
	"time"

	"github.com/stretchr/testify/assert"
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

// A guaranteed delete bound by WithMaxCzxid whose caller gave up while its read was
// answered late keeps the bound in the background ("A guaranteed delete keeps the
// condition in the background"; "Given a node's own czxid, it deletes that node and no
// other"): the node deleted and made again by another client meanwhile, at version 0
// like the one read, stays; so does one made again by another session after an
// OwnedBy delete of ours ("a node sid does not own is ErrNoNode").
func TestGuaranteedBoundDeleteLeavesNodeRemadeWhileRepliesHeld(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, st, err := c.CreateStat(ctx, "/bound", nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/owned", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	for _, tc := range []struct {
		path string
		opt  framework.DeleteOption
		mode framework.CreateMode
	}{
		{"/bound", framework.WithMaxCzxid(st.Czxid), framework.Persistent},
		{"/owned", framework.OwnedBy(c.SessionID()), framework.Ephemeral},
	} {
		sent := proxy.Forwarded()
		proxy.HoldReplies()
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := c.Delete(dctx, tc.path, tc.opt, framework.Guaranteed())
		cancel()
		require.Error(t, err, tc.path)
		require.Greater(t, proxy.Forwarded(), sent, "%s: the first attempt reached the server", tc.path)
		require.NoError(t, other.Delete(ctx, tc.path, framework.Quietly()), tc.path) // an OwnedBy first attempt deletes at once
		_, err = other.Create(ctx, tc.path, []byte("theirs"), framework.WithMode(tc.mode))
		require.NoError(t, err, tc.path)
		proxy.Heal()
		require.NoError(t, c.WaitGuaranteedDeletes(ctx), tc.path)
		data, _, err := other.GetData(ctx, tc.path)
		require.NoError(t, err, "%s: the node another client made again after our read was deleted by our guaranteed delete", tc.path)
		assert.Equal(t, "theirs", string(data))
	}
	require.NoError(t, other.Delete(ctx, "/bound"))
}
