package persistentnode_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// The reply to the first create of an unprotected sequential node is lost (the server
// applied it, then the connection dropped): the retry must not make a second node. One
// node, reported as created, deleted by Close; its name keeps Curator's form (no
// protected prefix).
func TestSequentialFirstCreateReplyLost(t *testing.T) {
	for _, mode := range []framework.CreateMode{framework.EphemeralSequential, framework.PersistentSequential} {
		t.Run(map[framework.CreateMode]string{framework.EphemeralSequential: "ephemeral", framework.PersistentSequential: "persistent"}[mode], func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			proxy := zktest.NewProxy(t, srv.ConnectString())
			c := testutil.ConnectFailFast(t, proxy.ConnectString())
			other := testutil.ConnectFailFast(t, srv.ConnectString())
			ctx := testutil.Context(t, 60*time.Second)
			require.NoError(t, other.EnsurePath(ctx, "/pn/seq")) // the node's create is the first create sent
			proxy.DropNextCreateReply()
			n, created := start(t, c, "/pn/seq/node-", []byte("d"), persistentnode.WithMode(mode))
			ev := waitCreated(t, created, 10*time.Second)
			assert.Equal(t, persistentnode.Created{Path: n.ActualPath()}, ev)
			assert.Equal(t, 2, proxy.Accepted(), "the create's connection was dropped: the client reconnected")
			assert.False(t, framework.IsProtectedName(framework.NodeName(n.ActualPath())), n.ActualPath())
			assert.Equal(t, []string{framework.NodeName(n.ActualPath())}, testutil.Children(t, srv.ConnectString(), "/pn/seq"),
				"one node: the one the lost reply was about")
			require.NoError(t, n.Close())
			testutil.RequireNoChildren(t, srv.ConnectString(), "/pn/seq")
		})
	}
}

// The first create of an unprotected sequential node fails for good (its reply lost, and
// the retry policy allows no retry), yet the server made the node: the next attempt finds
// it by the Node's token and takes it, instead of making a second one; Close deletes it.
func TestSequentialFirstCreateFailedForGoodIsTaken(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	never, err := retry.NewNTimes(0, 10*time.Millisecond)
	require.NoError(t, err)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRetryPolicy(never))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	require.NoError(t, other.EnsurePath(ctx, "/pn/seqfail"))
	proxy.DropNextCreateReply()
	n, created := start(t, c, "/pn/seqfail/node-", []byte("d"), persistentnode.WithMode(framework.EphemeralSequential))
	ev := waitCreated(t, created, 10*time.Second)
	assert.Equal(t, persistentnode.Created{Path: n.ActualPath()}, ev)
	assert.Equal(t, 2, proxy.Accepted(), "the create's connection was dropped: the client reconnected")
	assert.Equal(t, []string{"node-0000000000"}, testutil.Children(t, srv.ConnectString(), "/pn/seqfail"),
		"one node: the one the failed create made")
	require.NoError(t, n.Close())
	testutil.RequireNoChildren(t, srv.ConnectString(), "/pn/seqfail")
}
