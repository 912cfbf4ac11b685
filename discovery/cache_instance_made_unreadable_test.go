package discovery_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// An instance whose node's ACL its owner narrows so that this provider's client may no
// longer read it (setACL fires no watch), and which its owner then disables with Update:
// the provider's cache may not read that node any more, and must not go on handing out
// the instance as enabled. ServiceCache: "The path-children cache holds no node it may
// not read: nor does this cache"; ServiceProvider: disabled instances "are always left
// out".
func TestProviderDropsInstanceMadeUnreadableThenDisabled(t *testing.T) {
	connect := shared(t)
	owner := testutil.Connect(t, connect, framework.WithAuth("digest", []byte("owner:pw")))
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/madeunreadable"
	od, err := discovery.New[details](owner, base)
	require.NoError(t, err)
	defer od.Close()
	inst := newInstance(t, "svc", "x", 1)
	require.NoError(t, od.Register(ctx, inst))

	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	defer p.Close()
	got, err := p.GetInstance()
	require.NoError(t, err)
	require.Equal(t, "x", got.ID)

	// The owner keeps every right (and the registration's token entry); anyone else
	// loses READ.
	node := base + "/svc/x"
	acl, _, err := owner.GetACL(ctx, node)
	require.NoError(t, err)
	var narrowed []zk.ACL
	for _, a := range acl {
		if a.Scheme != "world" {
			narrowed = append(narrowed, a)
		}
	}
	narrowed = append(narrowed, zk.DigestACL(zk.PermAll, "owner", "pw")...)
	_, err = owner.SetACL(ctx, node, narrowed, -1)
	require.NoError(t, err)
	_, _, err = c.GetData(ctx, node)
	require.ErrorIs(t, err, framework.ErrNoAuth, "the provider's client may no longer read the node")

	disabled := *inst
	disabled.Enabled = false
	require.NoError(t, od.Update(ctx, &disabled))
	q, err := od.QueryForInstance(ctx, "svc", "x")
	require.NoError(t, err)
	require.False(t, q.Enabled, "the node says disabled")

	deadline := time.Now().Add(25 * time.Second)
	var all []*discovery.Instance[details]
	for time.Now().Before(deadline) {
		all, err = p.GetAllInstances()
		if err == nil && len(all) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("25 s after instance x was made unreadable to the provider and disabled, the provider still hands it out: %d instance(s), err %v, cache %d instance(s) enabled=%v",
		len(all), err, len(p.Cache().Instances()), p.Cache().Instances()[0].Enabled)
}
