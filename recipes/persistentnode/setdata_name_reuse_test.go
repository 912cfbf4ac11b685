package persistentnode_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// An unprotected sequential node whose name another client's node has taken (the parent
// was deleted and made again, its counter restarted) is "neither kept nor written" (package
// doc, "What is not guaranteed"). A SetData made before the Node's loop has looked at the
// node again (its look is held in the request hook, not yet sent) must not write the
// wanted data into the other's node: the name is not the Node's node, the czxid is.
func TestSetDataLeavesAnotherNodeAtTheSequentialName(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	var armed atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	var released atomic.Bool
	unblock := func() {
		if released.CompareAndSwap(false, true) {
			close(release)
		}
	}
	t.Cleanup(unblock)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op == "exists" && armed.CompareAndSwap(true, false) {
			close(held)
			<-release // the loop's look at its node waits here, not sent yet
		}
	}))
	require.NoError(t, admin.EnsurePath(ctx, "/pnreuse"))
	n, _ := start(t, c, "/pnreuse/seq/node-", []byte("mine"), persistentnode.WithMode(framework.PersistentSequential))
	mine := n.ActualPath()
	require.Equal(t, "/pnreuse/seq/node-0000000000", mine)

	armed.Store(true)
	// The parent and the Node's node go; the parent is made again and another client's
	// sequential node gets the Node's name from the restarted counter.
	require.NoError(t, admin.Delete(ctx, "/pnreuse/seq", framework.WithChildren()))
	testutil.WaitClosed(t, held, 20*time.Second, "the loop's look at its node after the deletion")
	_, err := admin.Create(ctx, "/pnreuse/seq", nil)
	require.NoError(t, err)
	theirs, err := admin.Create(ctx, "/pnreuse/seq/node-", []byte("theirs"), framework.WithMode(framework.PersistentSequential))
	require.NoError(t, err)
	require.Equal(t, mine, theirs, "the other's node takes the Node's name")
	_, before, err := admin.GetData(ctx, theirs)
	require.NoError(t, err)

	serr := n.SetData(ctx, []byte("wanted"))
	data, st, err := admin.GetData(ctx, theirs)
	require.NoError(t, err)
	unblock()
	assert.Equal(t, "theirs", string(data),
		"SetData wrote the Node's data into another client's node at its old sequential name (czxid %#x, not the Node's; SetData returned %v)", st.Czxid, serr)
	assert.Equal(t, before.Mzxid, st.Mzxid, "the other's node was written")

	require.NoError(t, n.Close())
	st, err = admin.Exists(ctx, theirs)
	require.NoError(t, err)
	require.NotNil(t, st, "the Node's Close deleted the other's node")
	_ = admin.Delete(ctx, "/pnreuse", framework.WithChildren(), framework.Quietly())
}
