package leader_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// Package doc: "Leadership ends (the Term's Done closes) when it may be lost: ... when the
// node goes". An operator (any client with ADMIN on the node) takes READ on the leader's
// latch node away from the leader's client, leaving it to the next participant (setACL
// fires no watch), then deletes the node. ZooKeeper fires no watch of a client for a node
// it may not read, so the leader's data watch on its own node never fires, and it watches
// nothing else while it leads (the path's children, which it may still read, would tell
// it). The next participant's watch fires and it leads; the first one keeps leading on a
// node that is gone: two leaders at once.
func TestLatchLeaderNodeMadeUnreadableThenDeletedEndsTerm(t *testing.T) {
	testutil.KnownDefect(t, "a leading latch whose own node is made unreadable to it is not told of that node's delete (ZooKeeper fires no watch on a node its client may not read)")
	srv := zktest.NewServer(t)
	const path = "/leader/made-unreadable"
	ctx := testutil.Context(t, 60*time.Second)
	ca := testutil.Connect(t, srv.ConnectString())
	cb := testutil.Connect(t, srv.ConnectString(), framework.WithAuth("digest", []byte("bob:secret")))
	admin := testutil.Connect(t, srv.ConnectString(), framework.WithAuth("digest", []byte("admin:secret")))

	la := startLatch(t, ca, path, "a")
	term := await(t, la, 20*time.Second, "a leads")
	lb := startLatch(t, cb, path, "b")
	testutil.WaitParticipants[leader.Participant](t, la, 2, 10*time.Second)
	node := la.Node()
	// b waits behind a with a data watch on a's node.
	require.Eventually(t, func() bool { return testutil.ZKWatchers(t, cb, node).Data > 0 }, 10*time.Second,
		5*time.Millisecond, "b watches a's node")

	// READ for b (and the admin), none for a; then the node goes.
	acl := append(zk.DigestACL(zk.PermAll, "admin", "secret"), zk.DigestACL(zk.PermRead, "bob", "secret")...)
	_, err := admin.SetACL(ctx, node, acl, -1)
	require.NoError(t, err)
	require.NoError(t, admin.Delete(ctx, node))

	require.NoError(t, lb.Await(testutil.Context(t, 20*time.Second)), "b leads once a's node is gone")
	select {
	case <-term.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("a still leads (HasLeadership %v) 5 s after its node was deleted, while b leads too (HasLeadership %v)",
			la.HasLeadership(), lb.HasLeadership())
	}
}
