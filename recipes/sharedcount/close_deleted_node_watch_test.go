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
	// The count's watch fired (deleted); it looks again and waits for its node to be made
	// again: with a watch on the missing path, or on the parent's children.
	require.Eventually(t, func() bool {
		return testutil.ZKWatchers(t, c, path).Exists > 0 || testutil.ZKWatchers(t, c, "/counts").Children > 0
	}, 20*time.Second, 10*time.Millisecond, "the count did not look at its deleted node again")
	require.NoError(t, sc.Close())
	w := testutil.ZKWatchers(t, c, path)
	require.Zero(t, w.Exists+w.Data, "a closed count left a watch on %s, where no node is (%+v)", path, w)
}

// A count whose node was deleted reads it as soon as it is made again (a change of the
// node, told to the listeners), although it sets no watch on the missing path.
func TestCountReadsNodeMadeAgainAfterDeletion(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/counts/again"
	sc, err := sharedcount.New(c, path, 3)
	require.NoError(t, err)
	heard := make(chan sharedcount.Versioned[int32], 8)
	defer sc.AddListener(func(v sharedcount.Versioned[int32], err error) {
		if err == nil {
			heard <- v
		}
	})()
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { _ = sc.Close() })
	require.NoError(t, other.Delete(ctx, path))
	require.Eventually(t, func() bool { return testutil.ZKWatchers(t, c, "/counts").Children > 0 },
		20*time.Second, 10*time.Millisecond, "the count does not wait for its node to be made again")
	_, err = other.Create(ctx, path, sharedcount.Encode(7))
	require.NoError(t, err)
	_, st, err := other.GetData(ctx, path)
	require.NoError(t, err)
	want := sharedcount.Versioned[int32]{Value: 7, Version: st.Version, Zxid: st.Mzxid}
	select {
	case v := <-heard:
		require.Equal(t, want, v, "the listener heard the node made again")
	case <-ctx.Done():
		t.Fatal("the count did not read its node made again")
	}
	got, err := sc.Get()
	require.NoError(t, err)
	require.Equal(t, want, got)
}
