package framework_test

import (
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestNamespaceCreatedOnFirstUse: on a fresh server, where the namespace node does not
// exist, operations under the namespace work as Curator's do (its namespace facade
// creates the namespace, with its parents, on first use): listing "/" gives no children,
// a node is created without WithParents, and the namespace's nodes are there; once the
// namespace exists, an operation costs one request, not one more.
func TestNamespaceCreatedOnFirstUse(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithNamespace("apps/fresh"))
	kids, _, err := c.Children(ctx, "/")
	require.NoError(t, err, "listing the namespace's root on a fresh server")
	assert.Empty(t, kids)
	_, err = c.Create(ctx, "/a", []byte("d"))
	require.NoError(t, err, "creating a node right under the namespace")

	plain := testutil.ConnectFailFast(t, srv.ConnectString())
	data, _, err := plain.GetData(ctx, "/apps/fresh/a")
	require.NoError(t, err)
	assert.Equal(t, "d", string(data))

	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"exists", func() error { _, err := c.Exists(ctx, "/a"); return err }},
		{"children", func() error { _, _, err := c.Children(ctx, "/"); return err }},
		{"getData", func() error { _, _, err := c.GetData(ctx, "/a"); return err }},
	} {
		before := c.Requests()
		require.NoError(t, op.do(), op.name)
		assert.Equal(t, uint64(1), c.Requests()-before, "%s: requests once the namespace exists", op.name)
	}

	// Another client finds the namespace there: its operations work too.
	other := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithNamespace("apps/fresh"))
	kids, _, err = other.Children(ctx, "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, kids)
}

// TestNamespaceRetriedAfterRefusal: a namespace whose creation is refused (here the parent
// allows reading only) is tried again by the next operation, as Curator's namespace facade
// tries until it succeeds: once the parent allows it, the namespace node is made and the
// client works under it. The refused operation reports its own error.
func TestNamespaceRetriedAfterRefusal(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	_, err := admin.Create(ctx, "/locked", nil, framework.WithNodeACL(zk.WorldACL(zk.PermRead|zk.PermAdmin)))
	require.NoError(t, err)

	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithNamespace("locked/ns"))
	_, err = c.Create(ctx, "/a", []byte("d"))
	require.Error(t, err, "a create under a namespace that cannot be made")

	_, err = admin.SetACL(ctx, "/locked", zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/a", []byte("d"))
	require.NoError(t, err, "the namespace is made once its parent allows it")
	data, _, err := admin.GetData(ctx, "/locked/ns/a")
	require.NoError(t, err)
	assert.Equal(t, "d", string(data))
	require.NoError(t, admin.Delete(ctx, "/locked", framework.WithChildren()))
}

// TestNamespaceThereButParentClosed: a namespace node an administrator made, under a parent
// this client may read but not create in (a tenant's namespace under a shared, closed
// /tenants), works, and once found costs nothing more: one request per operation, as
// before the namespace was retried on every operation. Curator's ZKPaths.mkdirs asks
// exists first, finds the node and settles; a create answered NoAuth must not be taken
// for "cannot be made, try again next operation" when the node is there.
func TestNamespaceThereButParentClosed(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	_, err := admin.Create(ctx, "/tenants", nil)
	require.NoError(t, err)
	_, err = admin.Create(ctx, "/tenants/a", nil)
	require.NoError(t, err)
	_, err = admin.SetACL(ctx, "/tenants", zk.WorldACL(zk.PermRead), -1)
	require.NoError(t, err)
	defer func() {
		_, _ = admin.SetACL(ctx, "/tenants", zk.WorldACL(zk.PermAll), -1)
		_ = admin.Delete(ctx, "/tenants", framework.WithChildren())
	}()

	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithNamespace("tenants/a"))
	_, err = c.Create(ctx, "/x", []byte("d"))
	require.NoError(t, err, "a create under an existing namespace")
	for i := range 5 {
		before := c.Requests()
		_, _, err := c.GetData(ctx, "/x")
		require.NoError(t, err)
		assert.Equal(t, uint64(1), c.Requests()-before, "getData %d: requests once the namespace was found", i)
	}
}

// A protected create under a namespace whose reply is lost finds its node on the retry
// (Curator's protected mode) and returns its path without the namespace (Create: "returns
// its path (with the sequence suffix and protected prefix, if any; without the
// namespace)"): one node, named with the call's prefix. So does CreateStat, whose Stat is
// that node's.
func TestNamespaceProtectedCreateThroughLostReply(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithNamespace("apps/prot"))
	plain := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	require.NoError(t, c.EnsurePath(ctx, "/locks"))
	for i, mode := range []framework.CreateMode{framework.EphemeralSequential, framework.Ephemeral} {
		prefix := framework.NewProtectedPrefix()
		proxy.DropNextCreateReply()
		accepted := proxy.Accepted()
		p, st, err := c.CreateStat(ctx, "/locks/n-", []byte("me"), framework.WithMode(mode), framework.WithProtectionPrefix(prefix))
		require.NoError(t, err, "mode %v", mode)
		assert.Greater(t, proxy.Accepted(), accepted, "the create's connection was dropped")
		assert.True(t, strings.HasPrefix(p, "/locks/"+prefix+"n-"), "mode %v: path %q", mode, p)
		require.NotNil(t, st)
		_, real, err := plain.GetData(ctx, "/apps/prot"+p)
		require.NoError(t, err, "mode %v: the node at the namespaced path", mode)
		assert.Equal(t, real.Czxid, st.Czxid, "mode %v", mode)
		kids, _, err := plain.Children(ctx, "/apps/prot/locks")
		require.NoError(t, err)
		assert.Len(t, kids, i+1, "mode %v: one node per create: %v", mode, kids)
	}
}
