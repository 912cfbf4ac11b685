package discovery_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// QueryForInstances: "Nodes whose data is not an instance are left out: the instances
// read are returned together with an error that joins one *InstanceError per such node";
// the package doc: "QueryForInstances and caches skip a node whose data is not an
// instance and say which". The cache skips a node its client may not read with an
// *InstanceError (CacheBadInstance); the query must not lose every readable instance of
// the service to one such node.
func TestQueryForInstancesSkipsAnUnreadableNode(t *testing.T) {
	connect := shared(t)
	owner := testutil.Connect(t, connect, framework.WithAuth("digest", []byte("owner:pw")))
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 30*time.Second)
	const base = "/disc/queryunreadable"
	od, err := discovery.New[details](owner, base)
	require.NoError(t, err)
	defer od.Close()
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "a", 1)))
	data, err := newInstance(t, "svc", "b", 2).Marshal()
	require.NoError(t, err)
	_, err = owner.Create(ctx, base+"/svc/b", data, framework.WithNodeACL(zk.DigestACL(zk.PermAll, "owner", "pw")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = owner.Delete(ctx, base+"/svc/b", framework.Quietly()) })

	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	got, err := d.QueryForInstances(ctx, "svc")
	var ie *discovery.InstanceError
	if len(got) != 1 || got[0].ID != "a" || !errors.As(err, &ie) {
		t.Fatalf("QueryForInstances with instance a readable and b unreadable returned %d instance(s), err %v (want a, and an *InstanceError for b)", len(got), err)
	}
}
