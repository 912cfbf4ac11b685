package persistentnode_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
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

// The node layout is Curator's: a Curator PersistentNode's protected sequential node has
// the name form Go's has (and the reverse), and each puts back its own node when the other
// side deletes it.
func TestInteropCurator(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := curatortest.Start(t, srv.ConnectString(), curatortest.WithSessionTimeout(4*time.Second))
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)
	const parent = "/interop/pnode"

	ido(t, ctx, tool, "pnode.new j EPHEMERAL_SEQUENTIAL true %s/member- java", parent)
	require.Equal(t, "true", ido(t, ctx, tool, "pnode.wait j 20000"))
	jpath := ido(t, ctx, tool, "pnode.path j")
	g, created := start(t, c, parent+"/member-", []byte("go"),
		persistentnode.WithMode(framework.EphemeralSequential), persistentnode.WithProtection())
	waitCreated(t, created, 10*time.Second)
	gpath := g.ActualPath()

	// Same name form: _c_<uuid>-member-<10 digits>.
	for _, p := range []string{jpath, gpath} {
		name := framework.NodeName(p)
		require.True(t, framework.IsProtectedName(name), name)
		rest := framework.StripProtectedPrefix(name)
		assert.Regexp(t, `^member-\d{10}$`, rest)
	}
	data, st, err := c.GetData(ctx, jpath)
	require.NoError(t, err)
	assert.Equal(t, "java", string(data))
	assert.NotZero(t, st.EphemeralOwner)

	// Go deletes Curator's node: Curator puts it back at the same path.
	require.NoError(t, c.Delete(ctx, jpath))
	require.Eventually(t, func() bool {
		st, err := c.Exists(ctx, jpath)
		return err == nil && st != nil
	}, 30*time.Second, 20*time.Millisecond, "Curator's node is back")
	assert.Equal(t, jpath, ido(t, ctx, tool, "pnode.path j"))

	// Curator's SetData reaches its node.
	ido(t, ctx, tool, "pnode.setdata j java2")
	require.Eventually(t, func() bool {
		d, _, err := c.GetData(ctx, jpath)
		return err == nil && string(d) == "java2"
	}, 30*time.Second, 20*time.Millisecond)

	assert.ElementsMatch(t, []string{framework.NodeName(jpath), framework.NodeName(gpath)}, testutil.Children(t, srv.ConnectString(), parent))
	ido(t, ctx, tool, "pnode.close j")
	require.NoError(t, g.Close())
	testutil.RequireNoChildren(t, srv.ConnectString(), parent)
}

// A plain persistent node made by a Curator PersistentNode is found by a Go Node on the
// same path: kept and written (as Curator does with a node it finds), and left in place by
// the Go Node's Close, since Curator made it; Curator's close deletes it.
func TestInteropCuratorNodeFound(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := curatortest.Start(t, srv.ConnectString(), curatortest.WithSessionTimeout(4*time.Second))
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)
	const path = "/interop/found/config"

	ido(t, ctx, tool, "pnode.new j PERSISTENT false %s java", path)
	require.Equal(t, "true", ido(t, ctx, tool, "pnode.wait j 20000"))
	g, err := persistentnode.New(c, path, []byte("go"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	require.NoError(t, g.Start())
	defer g.Close()
	require.NoError(t, g.WaitForInitialCreate(ctx))
	assert.Equal(t, path, g.ActualPath())
	require.Eventually(t, func() bool {
		d, _, err := c.GetData(ctx, path)
		return err == nil && string(d) == "go"
	}, 30*time.Second, 20*time.Millisecond, "the Go Node writes its data into the node found")
	require.NoError(t, g.Close())
	st, err := c.Exists(ctx, path)
	require.NoError(t, err)
	require.NotNil(t, st, "the Go Node does not delete Curator's node")
	ido(t, ctx, tool, "pnode.close j")
	testutil.RequireNoChildren(t, srv.ConnectString(), "/interop/found")
}

// A Curator PersistentTtlNode and a Go TTLNode make the same nodes: a container with the
// data given and a "touch" child of TTL mode. Both go once their owners stop touching.
func TestInteropCuratorTTLNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := curatortest.Start(t, srv.ConnectString(), curatortest.WithSessionTimeout(4*time.Second))
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)
	const jpath, gpath = "/interop/ttl/java", "/interop/ttl/go"

	ido(t, ctx, tool, "ttlnode.new j %s 1000 java", jpath)
	require.Equal(t, "true", ido(t, ctx, tool, "ttlnode.wait j 20000"))
	g, err := persistentnode.NewTTL(c, gpath, time.Second, []byte("go"))
	require.NoError(t, err)
	require.NoError(t, g.Start())
	defer g.Close()
	require.NoError(t, g.WaitForInitialCreate(ctx))

	stat := func(p string) *framework.Stat {
		t.Helper()
		for {
			st, w, err := c.ExistsW(ctx, p)
			require.NoError(t, err)
			if st != nil {
				return st
			}
			select {
			case <-w.Done():
			case <-ctx.Done():
				t.Fatalf("%s never made", p)
			}
		}
	}
	// ZooKeeper reports 0 as a container's or TTL node's ephemeralOwner to clients, so the
	// modes show only in what the server does: both pairs go once untouched (below).
	stat(jpath + "/touch")
	stat(gpath + "/touch")
	for _, p := range []string{jpath, gpath} {
		kids, _, err := c.Children(ctx, p)
		require.NoError(t, err)
		assert.Equal(t, []string{"touch"}, kids, p)
	}
	d, _, err := c.GetData(ctx, jpath)
	require.NoError(t, err)
	assert.Equal(t, "java", string(d))

	ido(t, ctx, tool, "ttlnode.close j")
	require.NoError(t, g.Close())
	require.Eventually(t, func() bool {
		kids, _, err := c.Children(ctx, "/interop/ttl")
		return err == nil && len(kids) == 0
	}, 60*time.Second, 100*time.Millisecond, "the server deletes both once untouched")
}
