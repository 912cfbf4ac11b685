package discovery_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// An instance whose node's ACL its owner narrows so that this provider's client may no
// longer read it (setACL fires no watch), and which its owner then disables with Update
// (the server tells the provider's watch nothing of a change to a node it may not
// read): ServiceCache's doc says the instance is held as last read until a reconnection
// reads it again; then it is dropped (and reported CacheBadInstance).
func TestProviderDropsInstanceMadeUnreadableThenDisabled(t *testing.T) {
	connect := shared(t)
	proxy := zktest.NewProxy(t, connect)
	owner := testutil.Connect(t, connect, framework.WithAuth("digest", []byte("owner:pw")))
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(10*time.Second))
	states := testutil.States(c)
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
	// An instance registered after those changes: once the provider has it, any event
	// for x would have come (one session's watch events arrive in order).
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "y", 2)))
	require.Eventually(t, func() bool { return len(p.Cache().Instances()) == 2 }, 20*time.Second, 20*time.Millisecond)
	all, err := p.GetAllInstances()
	require.NoError(t, err)
	require.Len(t, all, 2, "x is held as last read (enabled)")

	// A reconnection reads x again: denied, it is dropped.
	bad := make(chan discovery.CacheEvent, 16)
	defer p.Cache().AddListener(func(ev discovery.CacheEvent) {
		if ev.Type == discovery.CacheBadInstance {
			select {
			case bad <- ev:
			default:
			}
		}
	})()
	proxy.DropConnections()
	testutil.WaitState(t, states, framework.Reconnected, 20*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		all, err = p.GetAllInstances()
		if err == nil && len(all) == 1 && all[0].ID == "y" {
			select {
			case ev := <-bad:
				require.Equal(t, node, ev.Path)
			case <-time.After(10 * time.Second):
				t.Fatal("no CacheBadInstance for the unreadable node")
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("after a reconnection the provider still hands out %d instance(s), err %v; x was made unreadable to it and disabled", len(all), err)
}
