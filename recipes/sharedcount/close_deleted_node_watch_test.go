package sharedcount_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

// Close: "The data watch set on the node stays registered on the server until it fires
// or the session ends ...". Once the count's node was deleted by someone else, the count
// watches the missing path with an exists watch; after Close that watch stays on a path
// that nobody may ever create again (go-zookeeper cannot remove it), for as long as the
// session lives: one more per closed count. (persistentnode looks with a data watch,
// which the server sets only on a node that is there, for this reason; Curator's
// SharedValue reads with getData, which sets no watch on a missing node.) A closed count
// must leave no watch on a path where no node is.
func TestCountCloseAfterNodeDeletedLeavesNoWatchOnMissingPath(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/counts/deleted"
	sc, err := sharedcount.New(c, path, 3)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	require.NoError(t, other.Delete(ctx, path))
	// The count's watch fired (deleted); it looks again and watches the missing path.
	require.Eventually(t, func() bool { return testutil.ZKWatchers(t, c, path).Exists > 0 },
		20*time.Second, 10*time.Millisecond, "the count did not look at its deleted node again")
	require.NoError(t, sc.Close())
	w := testutil.ZKWatchers(t, c, path)
	require.Zero(t, w.Exists+w.Data, "a closed count left a watch on %s, where no node is (%+v)", path, w)
}
