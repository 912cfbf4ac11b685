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

// A NodeCache whose node does not exist "waits for it and reports it when it is
// created". Created with an ACL that denies the cache's client, it is a node the cache
// should hold that cannot be read: reported Unreadable, read again every 10 s, "and
// holds it once it can read it". Here it is made readable by setACL soon after: the
// cache must end up holding it, not report it missing for good.
func TestNodeCacheHoldsMissingNodeCreatedUnreadableThenOpened(t *testing.T) {
	srv := zktest.NewServer(t)
	owner := newClient(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const p = "/missing-then-unreadable"
	t.Cleanup(func() { _ = owner.Delete(ctx, p, framework.Quietly()) })

	nc, err := cache.NewNodeCache(c, p, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	rn := listen(t, newRecorder(p, false), nc.AddListener)
	require.NoError(t, nc.Start(ctx))
	t.Cleanup(func() { _ = nc.Close() })
	_, ok := nc.Current()
	require.False(t, ok)

	_, err = owner.Create(ctx, p, []byte("n"), framework.WithNodeACL(zk.DigestACL(zk.PermAll, "owner", "pw")))
	require.NoError(t, err)
	_, err = owner.SetACL(ctx, p, zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)

	deadline := time.Now().Add(25 * time.Second)
	for time.Now().Before(deadline) {
		if d, ok := nc.Current(); ok && string(d.Data) == "n" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("25 s after %s was created (unreadable) and then opened to everyone, the node cache still reports it missing (events %v)", p, rn.all())
}
