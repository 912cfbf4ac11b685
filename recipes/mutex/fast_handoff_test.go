package mutex_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// The fast hand-off, when the node ahead (first in line) is deleted, must look whether
// our own node is still there before it takes the lock. Without that, an operator clearing a
// stuck lock (zkCli deleteall: the waiter's node, then the holder's) leaves the waiter
// "holding" a lease whose node is gone, and a third contender then gets the lock too: two
// holders. Curator lists the children again after every watch and fails the waiter
// (its node is missing), as our slow path does (ErrNodeLost, then a new node).
// Deterministic: B's data watch on A's node is seen on the server (wchp) before the deletes.
func TestFastHandoffWithOwnNodeGoneMakesNoSecondHolder(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	ca := testutil.ConnectFailFast(t, srv.ConnectString())
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	cc := testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/fasthandoff"
	ma, err := mutex.New(ca, path)
	require.NoError(t, err)
	mb, err := mutex.New(cb, path)
	require.NoError(t, err)
	mc, err := mutex.New(cc, path)
	require.NoError(t, err)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	type res struct {
		l   *mutex.Lease
		err error
	}
	got := make(chan res, 1)
	go func() { l, err := mb.Acquire(ctx); got <- res{l, err} }()
	require.Eventually(t, func() bool {
		out, err := zktest.FourLetterWord(srv.Addr(), "wchp", 5*time.Second)
		return err == nil && strings.Contains(out, la.Node())
	}, 20*time.Second, 20*time.Millisecond, "B does not watch A's node")
	parts, err := mb.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, parts, 2)
	require.Equal(t, la.Node(), parts[0])
	// The operator clears the lock: the waiter's node, then the holder's.
	require.NoError(t, admin.Delete(ctx, parts[1]))
	require.NoError(t, admin.Delete(ctx, parts[0]))

	r := <-got
	if r.err == nil { // B started over with a new node (as Curator would) or took the hand-off
		defer r.l.Release(ctx)
		st, err := admin.Exists(ctx, r.l.Node())
		require.NoError(t, err)
		lc, cerr := mc.TryAcquire(ctx)
		if cerr == nil {
			defer lc.Release(ctx)
		}
		require.Truef(t, st != nil && cerr != nil, "B holds a lease whose node is gone: B's node %s exists %v; C's TryAcquire: err %v (nil: two holders)",
			r.l.Node(), st != nil, cerr)
	}
	_ = la.Release(ctx)
}
