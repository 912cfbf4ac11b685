package barrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/zktest"
)

func newBarrier(t testing.TB, c *framework.Client, path string) *barrier.Barrier {
	t.Helper()
	b, err := barrier.New(c, path)
	require.NoError(t, err)
	return b
}

// watchCount returns the number of watches the server holds.
func watchCount(t testing.TB, srv *zktest.Server) int64 {
	t.Helper()
	n, err := zktest.MntrInt(srv.Addr(), "zk_watch_count")
	require.NoError(t, err)
	return n
}

// waitWatches waits until the server holds at least n watches.
func waitWatches(t testing.TB, srv *zktest.Server, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return watchCount(t, srv) >= n }, 15*time.Second, 20*time.Millisecond,
		"waiting for %d watches on the server", n)
}

// requireGone checks, straight on the server, that path does not exist.
func requireGone(t testing.TB, connect, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := zktest.Dial(ctx, connect, 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	ok, _, err := conn.Exists(path)
	require.NoError(t, err)
	require.False(t, ok, "%s is still there", path)
}
