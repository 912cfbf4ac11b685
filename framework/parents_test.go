package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// waitReaped waits (bounded) until the server's container reaper deleted path.
func waitReaped(ctx context.Context, t *testing.T, c *framework.Client, path string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		st, ev, err := c.ExistsW(ctx, path)
		require.NoError(t, err)
		if st == nil {
			return
		}
		select {
		case <-ev.Done():
		case <-deadline:
			t.Fatalf("%s was not reaped within 30s", path)
		}
	}
}

// WithParents makes persistent parents (Curator's creatingParentsIfNeeded): a parent
// survives its last child's deletion, while a container emptied just after it, and so
// checked by the same or a later reaper pass, is reaped.
func TestWithParentsMakesPersistentParents(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/persist/kid", nil, framework.WithParents())
	require.NoError(t, err)
	_, err = c.Create(ctx, "/box", nil, framework.WithMode(framework.Container))
	require.NoError(t, err)
	_, err = c.Create(ctx, "/box/kid", nil)
	require.NoError(t, err)

	require.NoError(t, c.Delete(ctx, "/persist/kid"))
	require.NoError(t, c.Delete(ctx, "/box/kid"))
	waitReaped(ctx, t, c, "/box")
	st, err := c.Exists(ctx, "/persist")
	require.NoError(t, err)
	assert.NotNil(t, st, "a parent made by WithParents must be persistent")
	require.NoError(t, c.Delete(ctx, "/persist", framework.Quietly()))
}

// WithContainerParents makes container parents (Curator's
// creatingParentContainersIfNeeded), which the server reaps once empty; EnsurePath makes
// persistent nodes.
func TestWithContainerParentsAndEnsurePath(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	require.NoError(t, c.EnsurePath(ctx, "/ensured"))
	_, err := c.Create(ctx, "/ensured/kid", nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/cont/kid", nil, framework.WithContainerParents())
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, "/ensured/kid"))
	require.NoError(t, c.Delete(ctx, "/cont/kid"))
	waitReaped(ctx, t, c, "/cont")
	st, err := c.Exists(ctx, "/ensured")
	require.NoError(t, err)
	assert.NotNil(t, st, "EnsurePath makes persistent nodes")
	require.NoError(t, c.Delete(ctx, "/ensured"))
}
