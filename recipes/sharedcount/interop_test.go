package sharedcount_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

func ido(t *testing.T, ctx context.Context, tool *curatortest.Tool, format string, args ...any) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := tool.Do(cctx, format, args...)
	require.NoError(t, err, format, args)
	return out
}

// waitJava polls Curator's cached count until it reads want (its watch refreshes it).
func waitJava(t *testing.T, ctx context.Context, tool *curatortest.Tool, want string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return strings.HasPrefix(ido(t, ctx, tool, "count.get j"), want+" ")
	}, 30*time.Second, 20*time.Millisecond, "Curator's SharedCount never read %s", want)
}

// A SharedCount set by Curator is seen by Go and the other way round; TrySet conflicts are
// detected both ways.
func TestInteropCurator(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := curatortest.Start(t, srv.ConnectString(), curatortest.WithSessionTimeout(4*time.Second))
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)
	const path = "/interop/count"

	ido(t, ctx, tool, "count.new j %s 7", path) // Curator seeds it
	g := start(t, c, path, 100)
	heard := listen(g)
	v, err := g.Get()
	require.NoError(t, err)
	assert.Equal(t, int32(7), v.Value, "Go reads Curator's seed")

	ido(t, ctx, tool, "count.set j -12")
	waitValue(t, heard, -12)

	cur, err := g.Get()
	require.NoError(t, err)
	require.NoError(t, g.TrySet(ctx, cur, 30))
	waitJava(t, ctx, tool, "30")

	// Curator reads, Go changes, Curator's trySet from its reading is refused.
	ido(t, ctx, tool, "count.read j")
	cur, err = g.Get()
	require.NoError(t, err)
	require.NoError(t, g.TrySet(ctx, cur, 31))
	waitJava(t, ctx, tool, "31")
	assert.Equal(t, "false", ido(t, ctx, tool, "count.tryset j 99"), "Curator sees Go's change as a conflict")

	// Go reads, Curator changes (with a trySet that succeeds), Go's TrySet is refused.
	stale, err := g.Get()
	require.NoError(t, err)
	ido(t, ctx, tool, "count.read j")
	assert.Equal(t, "true", ido(t, ctx, tool, "count.tryset j 40"))
	waitValue(t, heard, 40)
	err = g.TrySet(ctx, stale, 41)
	require.ErrorIs(t, err, sharedcount.ErrConflict, "Go sees Curator's change as a conflict")
	data, _, err := c.GetData(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, sharedcount.Encode(40), data)
	ido(t, ctx, tool, "count.close j")
}
