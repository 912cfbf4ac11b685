package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestObserveReportsUnreadableLeader: Observe promises "the leader as ZooKeeper shows it
// now, then the new leader each time leadership changes hands". A Go latch leads; behind
// it waits a participant whose latch node the observer may not read (a Curator
// LeaderLatch with an ACL provider, say). When the Go latch leaves, leadership changes
// hands to that node, first in line as ZooKeeper lists it: the observer must say so,
// rather than stay silent, its last value naming a leader whose node is gone.
func TestObserveReportsUnreadableLeader(t *testing.T) {
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	owner := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:secret")))
	obs := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/leader/observe-unreadable"

	a := startLatch(t, c, path, "a")
	await(t, a, 20*time.Second, "a leads")
	// A participant joins behind a, its node readable only by its own user.
	node, err := owner.Create(ctx, path+"/"+framework.NewProtectedPrefix()+"latch-", []byte("java-acl"),
		framework.WithMode(framework.EphemeralSequential), framework.WithNodeACL(zk.DigestACL(zk.PermAll, "owner", "secret")))
	require.NoError(t, err)

	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := leader.Observe(octx, obs, path)
	require.NoError(t, err)
	p := next(t, ch, 20*time.Second, "a leads")
	require.Equal(t, a.Node(), p.Node)
	aNode := p.Node

	require.NoError(t, a.Close())
	kids := testutil.Children(t, srv.ConnectString(), path)
	require.Len(t, kids, 1, "ZooKeeper shows one participant left")

	select {
	case p, ok := <-ch:
		require.True(t, ok, "the channel closed")
		require.True(t, p.Leader, "the observer reported %+v", p)
		require.Equal(t, node, p.Node)
	case <-time.After(15 * time.Second):
		t.Fatalf("%s leads (first in line, as ZooKeeper lists it: %v), but 15 s after a left the observer has said nothing since its last value, which names a's node %s, gone", node, kids, aNode)
	}
}
