package leader_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A leading latch's node is written (as a revocation request is), then deleted and made
// again at the same name by another client, all in one transaction: the latch's data
// watch fires once, for the write (the delete finds no watch left), and the latch reads
// its node again to keep watching it. That read finds the other client's node. The term
// must end ("Leadership ends … when the node goes"; "a node another client made at its
// name is not its own"), as it does when the replacement is seen by the claim's read
// (TestLatchLeavesAnotherClientsNodeAtItsName). The interleaving is the server's state:
// one transaction, no timing.
func TestLatchNodeWrittenThenReplacedEndsTerm(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ca := testutil.ConnectFailFast(t, srv.ConnectString())
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/leader/node-written-then-replaced"

	la := startLatch(t, ca, path, "a")
	term := await(t, la, 20*time.Second, "a leads")
	node := la.Node()
	_, err := cb.Transaction(ctx,
		framework.SetDataOp(node, []byte("written"), -1),
		framework.DeleteOp(node, -1),
		framework.CreateOp(node, []byte("other's"), framework.Ephemeral, zk.WorldACL(zk.PermAll)))
	require.NoError(t, err)

	select {
	case <-term.Done():
	case <-time.After(10 * time.Second):
		// Still leading on the other client's node: the term's guard, which promises that
		// "the server applies the write only while the latch node exists", passes too.
		g, gerr := term.Guard()
		_, werr := ca.GuardedTransaction(ctx, g, framework.CreateOp(path+"-fenced", nil, framework.Persistent, nil))
		if werr == nil {
			_ = ca.Delete(ctx, path+"-fenced")
		}
		t.Fatalf("a still leads (HasLeadership %v, Term.Done open) 10 s after its node %s was deleted and another client made one at its name; a guarded write under its term (guard err %v) got %v",
			la.HasLeadership(), node, gerr, werr)
	}
	require.False(t, la.HasLeadership(), "a leads on another client's node")
	require.NoError(t, la.Close())
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	now, err := cb.Exists(ctx, node)
	require.NoError(t, err)
	require.NotNil(t, now, "a's Close deleted the node another client made at a's name")
	require.NoError(t, cb.Delete(ctx, node))
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}
