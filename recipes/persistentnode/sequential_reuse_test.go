package persistentnode_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// A sequential node is re-created at the name it had (as Curator does). When its parent
// was deleted and made again, that name is ahead of the new parent's sequence counter; a
// sequential create that reaches it is refused (node exists) and, the refusal changing
// nothing, so is every later one. So a Node makes its node again at its old name only in
// the parent it was made in; in a parent made again it makes a new sequential node.
// Another Node with the same base must still get its node (within a bound), and must not
// spin on a refusal, one request after another.
func TestSequentialCreateGetsANodeDespiteRecreatedName(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	var creates atomic.Int64
	cb := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op == "create" {
			creates.Add(1)
		}
	}))
	ca := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	require.NoError(t, admin.EnsurePath(ctx, "/pn/reuse/x")) // the parent's counter moves on
	a, _ := start(t, ca, "/pn/reuse/node-", []byte("a"), persistentnode.WithMode(framework.PersistentSequential))
	old := a.ActualPath()
	require.Equal(t, "/pn/reuse/node-0000000001", old)
	require.NoError(t, admin.Delete(ctx, "/pn/reuse", framework.WithChildren())) // the parent and all in it
	// a makes its node again, in a new parent whose counter was at 0: not at its old name
	// (node-0000000001, which a made-again node would block), a new sequential node.
	require.Eventually(t, func() bool {
		p := a.ActualPath()
		if p == "" || p == old {
			return false
		}
		st, err := admin.Exists(ctx, p)
		return err == nil && st != nil
	}, 30*time.Second, 10*time.Millisecond, "a's node was not made again (as a new sequential node)")
	st, err := admin.Exists(ctx, old)
	require.NoError(t, err)
	require.Nil(t, st, "a's node was made again at its old name, ahead of the new parent's counter")
	b, err := persistentnode.New(cb, "/pn/reuse/node-", []byte("b"), persistentnode.WithMode(framework.PersistentSequential))
	require.NoError(t, err)
	require.NoError(t, b.Start())
	t.Cleanup(func() { _ = b.Close() })
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	werr := b.WaitForInitialCreate(wctx)
	sent := creates.Load()
	require.NoError(t, b.Close())
	require.NoError(t, a.Close())
	require.NoError(t, werr, "b never got a node of its own (%d creates sent in 5 s)", sent)
	require.Less(t, sent, int64(50), "b spins on the refused create")
}

// A sequential create refused because the name the parent's counter gives is taken (a
// node made there by name, by someone else) changes nothing: trying again at once would
// spin. The Node waits between attempts, and gets its node once the counter moves on.
func TestSequentialCreateRefusedBacksOff(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	var creates atomic.Int64
	cb := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op == "create" {
			creates.Add(1)
		}
	}))
	ctx := testutil.Context(t, 60*time.Second)
	require.NoError(t, admin.EnsurePath(ctx, "/pn/block"))
	// The parent's counter is 1 after this create: the next sequential name is taken.
	_, err := admin.Create(ctx, "/pn/block/node-0000000001", nil)
	require.NoError(t, err)
	b, err := persistentnode.New(cb, "/pn/block/node-", []byte("b"), persistentnode.WithMode(framework.PersistentSequential))
	require.NoError(t, err)
	require.NoError(t, b.Start())
	t.Cleanup(func() { _ = b.Close() })
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	require.Error(t, b.WaitForInitialCreate(wctx), "created at a taken name")
	require.Less(t, creates.Load(), int64(20), "b spins on the refused create")
	// The counter moves on (the blocker's delete counts): b gets its node.
	require.NoError(t, admin.Delete(ctx, "/pn/block/node-0000000001"))
	require.NoError(t, b.WaitForInitialCreate(ctx))
	require.NotEmpty(t, b.ActualPath())
	require.NoError(t, b.Close())
	testutil.RequireNoChildren(t, srv.ConnectString(), "/pn/block")
}

// The Stat of a node just created is read by a second request (CreateStat). When the
// parent is deleted and made again between the two, and another Node's sequential create
// reuses the name, that read gives the other's Stat, and the Node takes the other's node
// (its czxid) for its own: it has no node of its own, while reported created. It must end
// up with a node of its own, and its Close must leave the other's.
func TestCreateStatOfAnotherNodeAfterNameReuseIsNotAdopted(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	require.NoError(t, admin.EnsurePath(ctx, "/pn/stat"))
	var b *persistentnode.Node
	var created, done atomic.Bool
	ca := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		switch {
		case op == "create":
			created.Store(true)
		case (op == "exists" || op == "getACL") && created.Load() && done.CompareAndSwap(false, true):
			// a's create was answered; before its Stat is read (by exists, or, bound to
			// the node's owner token, by getACL), the parent is made again and b's node
			// takes the name.
			_ = admin.Delete(ctx, "/pn/stat", framework.WithChildren())
			_, _ = admin.Create(ctx, "/pn/stat", nil)
			n, err := persistentnode.New(cb, "/pn/stat/node-", []byte("b"), persistentnode.WithMode(framework.PersistentSequential))
			if err == nil && n.Start() == nil && n.WaitForInitialCreate(ctx) == nil {
				b = n
			}
		}
	}))
	a, err := persistentnode.New(ca, "/pn/stat/node-", []byte("a"), persistentnode.WithMode(framework.PersistentSequential))
	require.NoError(t, err)
	require.NoError(t, a.Start())
	require.NoError(t, a.WaitForInitialCreate(ctx))
	require.True(t, done.Load())
	require.NotNil(t, b, "b's node was not made")
	bPath := b.ActualPath()
	require.Equal(t, "/pn/stat/node-0000000000", bPath, "b reuses a's old name")
	own := func() bool {
		p := a.ActualPath()
		if p == "" || p == bPath {
			return false
		}
		st, err := admin.Exists(ctx, p)
		return err == nil && st != nil
	}
	ok := assertEventually(own, 10*time.Second)
	aPath := a.ActualPath()
	require.NoError(t, a.Close())
	st, err := admin.Exists(ctx, bPath)
	require.NoError(t, err)
	require.NotNil(t, st, "a's Close deleted b's node")
	require.NoError(t, b.Close())
	require.True(t, ok, "a has no node of its own: it holds b's node %s as its own (a's path: %s)", bPath, aPath)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/pn/stat")
}

func assertEventually(cond func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}
