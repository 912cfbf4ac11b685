package testutil_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// ZKWatchers sees each kind of watch go-zookeeper holds on a node, and sees it go when
// it fires; a namespace is part of the server's path.
func TestZKWatchers(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithNamespace("zkw"))
	ctx := testutil.Context(t, 60*time.Second)
	const p, full = "/n", "/zkw/n"

	_, w, err := c.ExistsW(ctx, p) // absent: an exists watch is set all the same
	require.NoError(t, err)
	assert.Equal(t, testutil.Watchers{Exists: 1}, testutil.ZKWatchers(t, c, full))
	_, err = c.Create(ctx, p, nil)
	require.NoError(t, err)
	testutil.WaitClosed(t, w.Done(), 20*time.Second, "the exists watch")
	gone(t, c, full)

	_, _, dw, err := c.GetDataW(ctx, p)
	require.NoError(t, err)
	_, _, cw, err := c.ChildrenW(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, testutil.Watchers{Data: 1, Children: 1}, testutil.ZKWatchers(t, c, full))
	assert.Equal(t, testutil.Watchers{}, testutil.ZKWatchers(t, c, p), "the path without the namespace")
	require.NoError(t, c.Delete(ctx, p))
	testutil.WaitClosed(t, dw.Done(), 20*time.Second, "the data watch")
	testutil.WaitClosed(t, cw.Done(), 20*time.Second, "the children watch")
	gone(t, c, full)
}

// gone waits until go-zookeeper holds no watcher on path: it hands a node event to the
// framework (which closes Done) before it removes the watchers the event fired.
func gone(t *testing.T, c *framework.Client, path string) {
	t.Helper()
	require.Eventually(t, func() bool { return testutil.ZKWatchers(t, c, path) == testutil.Watchers{} },
		20*time.Second, 5*time.Millisecond, "go-zookeeper's watchers on %s", path)
}
