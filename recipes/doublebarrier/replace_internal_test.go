package doublebarrier

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A member node of ours, left by an older session, is replaced in a transaction that
// deletes it at the version read. Read at version -1 (a real node gets there only after
// 2^32-1 writes: the test hands replaceOurs the Stat such a read returns, for a real node
// on a real server), the delete would go out as "any version" and remove whatever node is
// at our name: it is refused and the node stays.
func TestReplaceOursRefusesWrappedVersion(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	d, err := New(c, "/barrier", 2)
	require.NoError(t, err)
	_, err = c.Create(ctx, d.ourPath, nil, framework.WithMode(framework.Ephemeral), framework.WithContainerParents())
	require.NoError(t, err)
	st, err := c.Exists(ctx, d.ourPath)
	require.NoError(t, err)

	wrapped := *st
	wrapped.Version = -1
	replaced, err := d.replaceOurs(ctx, &wrapped)
	require.ErrorIs(t, err, framework.ErrWrappedVersion, "the member node read at version -1 was replaced by a delete at \"any version\"")
	require.False(t, replaced)
	now, err := c.Exists(ctx, d.ourPath)
	require.NoError(t, err)
	require.NotNil(t, now)
	require.Equal(t, st.Czxid, now.Czxid)
}
