package discovery_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// An instance's node deleted and made again at once (one transaction, as a registration
// replacing a node does) by someone whose ACL this provider may not read (a Java service
// whose ACLProvider denies it, say): the cache reports the node as a bad instance ("the
// cache skips the node") and the provider no longer hands out the deleted instance.
func TestProviderDropsInstanceReplacedByUnreadableNode(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	other := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/unreadable"
	od, err := discovery.New[details](other, base)
	require.NoError(t, err)
	defer od.Close()
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "x", 1)))
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	bad := make(chan string, 10)
	p.Cache().AddListener(func(ev discovery.CacheEvent) {
		if ev.Type == discovery.CacheBadInstance {
			bad <- ev.Path
		}
	})
	require.NoError(t, p.Start(ctx))
	i, err := p.GetInstance()
	require.NoError(t, err)
	require.Equal(t, 1, i.Port)

	data, _, err := other.GetData(ctx, base+"/svc/x")
	require.NoError(t, err)
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "nobody:AAAAAAAAAAAAAAAAAAAAAAAAAAA="}, {Perms: zk.PermDelete, Scheme: "world", ID: "anyone"}}
	_, err = other.Transaction(ctx, framework.DeleteOp(base+"/svc/x", -1), framework.CreateOp(base+"/svc/x", data, framework.Persistent, acl))
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Delete(ctx, base+"/svc/x") })
	select {
	case p := <-bad:
		require.Equal(t, base+"/svc/x", p)
	case <-time.After(30 * time.Second):
		t.Fatal("the cache never reported the node it may not read")
	}
	require.Eventually(t, func() bool {
		all, err := p.GetAllInstances()
		return err == nil && len(all) == 0
	}, 10*time.Second, 20*time.Millisecond, "the provider still hands out the instance whose node was deleted (replaced by one it may not read), 10 s after the cache reported that node bad")
	require.NoError(t, p.Close())
}
