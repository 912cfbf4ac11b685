package doublebarrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A newcomer does not take the ready of a round under way for a leftover when the only
// member node left is a late member's. a, b and c (memberQty 3) are in; L enters late
// (its node is younger than ready) and its name is the lowest. a, b and c leave: each
// deletes its node and waits for the lowest, L, which is still inside. The round is under
// way (four members in it, none done), but its only member node, L's, is younger than
// ready. A newcomer n (memberQty 3) must join it late, as it would while any other member
// node is there; it must not delete the round's ready as "left by a round with no member
// left" and wait for two more members.
func TestEnterKeepsReadyOfRoundWhoseOnlyNodeIsLate(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, time.Minute)
	const path = "/lateround/barrier"
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	checker := testutil.ConnectFailFast(t, srv.ConnectString())
	a, b, c := newMember(t, other, path, 3), newMember(t, other, path, 3), newMember(t, other, path, 3)
	ins := []<-chan error{testutil.Go(ctx, a.Enter), testutil.Go(ctx, b.Enter), testutil.Go(ctx, c.Enter)}
	for _, in := range ins {
		require.NoError(t, testutil.Result(t, in, 20*time.Second, "Enter"))
	}
	late := lowestAfter(t, other, path, 3, a, b, c)
	require.NoError(t, late.Enter(ctx), "a late member of a round under way")
	ready, err := checker.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, ready)

	outs := []<-chan error{testutil.Go(ctx, a.Leave), testutil.Go(ctx, b.Leave), testutil.Go(ctx, c.Leave)}
	waitChildren(t, srv.ConnectString(), path, 2) // L's node and ready: a, b and c wait for L

	_, w, err := checker.ExistsW(ctx, path+"/ready")
	require.NoError(t, err)
	cn := testutil.ConnectFailFast(t, srv.ConnectString())
	n := newMember(t, cn, path, 3)
	nctx, cancel := context.WithCancel(ctx)
	defer cancel()
	entered := testutil.Go(nctx, n.Enter)
	select {
	case err := <-entered:
		require.NoError(t, err, "the newcomer's Enter")
		outs = append(outs, testutil.Go(ctx, n.Leave))
	case <-w.Done():
		assert.NotEqual(t, zk.EventNodeDeleted, w.Event().Type,
			"the newcomer deleted the ready (czxid %d) of a round under way: L is inside, a, b and c wait for it in Leave (children %v)",
			ready.Czxid, testutil.Children(t, srv.ConnectString(), path))
		select {
		case err := <-entered:
			assert.NoError(t, err, "the newcomer's Enter")
			if err == nil {
				outs = append(outs, testutil.Go(ctx, n.Leave))
			}
		case <-time.After(2 * time.Second):
			t.Errorf("the newcomer waits (memberQty 3, members: L and itself) instead of joining the round under way")
			cancel()
			<-entered
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the newcomer's Enter neither returned nor touched ready")
	}

	require.NoError(t, late.Leave(ctx))
	for _, o := range outs {
		require.NoError(t, testutil.Result(t, o, 20*time.Second, "Leave"))
	}
	assertNoMembers(t, srv.ConnectString(), path, other, cn, checker)
}
