package cache_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A NodeCache whose node does not exist waits for it with an exists watch. Created with
// an ACL that denies the cache's client, the node fires no event (the server drops the
// watch), nor does the setACL that then opens it to everyone: the doc says the cache
// reports it missing until a reconnection, which reads it again and holds it.
func TestNodeCacheHoldsMissingNodeCreatedUnreadableThenOpened(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	owner := newClient(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	c := newClient(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()), framework.WithSessionTimeout(10*time.Second))
	states := testutil.States(c)
	ctx := testutil.Context(t, 90*time.Second)
	const p, sync = "/missing-then-unreadable", "/missing-then-unreadable-sync"
	create(t, owner, sync, "s0")
	t.Cleanup(func() {
		_ = owner.Delete(ctx, p, framework.Quietly())
		_ = owner.Delete(ctx, sync, framework.Quietly())
	})

	nc, err := cache.NewNodeCache(c, p, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	rn := listen(t, newRecorder(p, false), nc.AddListener)
	require.NoError(t, nc.Start(ctx))
	t.Cleanup(func() { _ = nc.Close() })
	sc, err := cache.NewNodeCache(c, sync, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { _ = sc.Close() })
	_, ok := nc.Current()
	require.False(t, ok)

	_, err = owner.Create(ctx, p, []byte("n"), framework.WithNodeACL(zk.DigestACL(zk.PermAll, "owner", "pw")))
	require.NoError(t, err)
	_, err = owner.SetACL(ctx, p, zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	// A change the other cache sees after those: any event for p would have come.
	set(t, owner, sync, "s1")
	require.Eventually(t, func() bool { d, _ := sc.Current(); return string(d.Data) == "s1" }, 20*time.Second, 20*time.Millisecond)
	_, ok = nc.Current()
	require.False(t, ok, "reported missing until a reconnection (events %v)", rn.all())

	proxy.DropConnections()
	testutil.WaitState(t, states, framework.Reconnected, 20*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if d, ok := nc.Current(); ok && string(d.Data) == "n" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("after a reconnection %s (created unreadable, then opened to everyone) is still reported missing (events %v)", p, rn.all())
}
