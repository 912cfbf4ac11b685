package versioned_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/internal/versioned"
	"github.com/zoocurator/zoocurator/zktest"
)

// A node's version is a 32-bit counter that wraps: after 2^32-1 writes a read finds
// version -1, which ZooKeeper takes for "any version". A write bound to what was read
// (SetDataOn with the czxid read) at version -1 would overwrite whatever the node holds:
// it is refused before anything is sent (ErrWrappedVersion), and the node keeps its data.
func TestSetDataOnWrappedVersionIsRefused(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	_, err := c.Create(ctx, "/wrapped", []byte("theirs"))
	require.NoError(t, err)
	_, st, err := c.GetData(ctx, "/wrapped")
	require.NoError(t, err)

	_, err = versioned.SetDataOn(ctx, c, "/wrapped", []byte("ours"), -1, st.Czxid)
	require.ErrorIs(t, err, versioned.ErrWrappedVersion, "a compare-and-set at the read version -1 was sent as \"any version\"")
	data, _, err := c.GetData(ctx, "/wrapped")
	require.NoError(t, err)
	require.Equal(t, "theirs", string(data))
}
