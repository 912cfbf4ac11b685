package persistentnode_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// The package doc ("What is not guaranteed"): "A node found at the path and not made by
// this Node (another process's, or another Node's on the same client) is kept and its
// data set, as Curator does". Another client replaces the Node's own node in one
// transaction (delete, then create with its own data): the Node's watch fires for the
// delete, and its next look finds another's node at the path. Kept, as promised; its data
// must then be the Node's (Curator's PersistentNode gets NodeExists on its re-create and
// sets the data).
func TestPersistentNodeReplacedBehindItsBackGetsItsData(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/pn/replaced"
	n, err := persistentnode.New(c, path, []byte("mine"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	require.NoError(t, n.Start())
	t.Cleanup(func() { _ = n.Close() })
	require.NoError(t, n.WaitForInitialCreate(ctx))
	st, err := other.Exists(ctx, path)
	require.NoError(t, err)
	require.NotNil(t, st)

	// Replaced in one transaction: the Node never sees the path empty.
	_, err = other.Transaction(ctx,
		framework.DeleteOp(path, -1),
		framework.CreateOp(path, []byte("theirs"), framework.Persistent, nil))
	require.NoError(t, err)
	now, err := other.Exists(ctx, path)
	require.NoError(t, err)
	require.NotEqual(t, st.Czxid, now.Czxid)

	// The Node's watch fired (the delete); its look finds the other's node. A SetData-free
	// wait: the Node's recheck (10 s) or its watch step would write the data by then.
	var data []byte
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		data, _, err = other.GetData(ctx, path)
		require.NoError(t, err)
		if string(data) == "mine" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, "mine", string(data),
		"the node found at the path after its own was replaced is kept but its data were never set (Node.Data() = %q)", n.Data())
	require.NoError(t, n.Close())
	fin, err := other.Exists(ctx, path)
	require.NoError(t, err)
	require.NotNil(t, fin, "Close deleted the other client's node")
}
