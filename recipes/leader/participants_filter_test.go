package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// Participants lists election nodes only: a child of the election path that is not one
// (a semaphore's "leases", an operator's note) is never taken for a participant, let alone
// the leader (zkcurator's leader who showed "leases" as the leader of a semaphore path).
func TestParticipantsAreElectionNodesOnly(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	for _, tc := range []struct{ path string }{{"/pf/latch"}, {"/pf/selector"}} {
		_, err := c.Create(ctx, tc.path+"/leases", []byte("not a participant"), framework.WithParents())
		require.NoError(t, err)
	}
	l, err := leader.NewLatch(c, "/pf/latch", "a")
	require.NoError(t, err)
	require.NoError(t, l.Start(ctx))
	require.NoError(t, l.Await(ctx))
	ps, err := l.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1, "latch participants: %+v", ps)
	require.Equal(t, "a", ps[0].ID)
	require.True(t, ps[0].Leader)

	s, err := leader.NewSelector(c, "/pf/selector", "b", func(ctx context.Context) error { <-ctx.Done(); return nil })
	require.NoError(t, err)
	ps, err = s.Participants(ctx)
	require.NoError(t, err)
	require.Empty(t, ps, "selector participants")
	_, err = s.Leader(ctx)
	require.ErrorIs(t, err, leader.ErrNoLeader)
	require.NoError(t, l.Close())
	require.NoError(t, c.Delete(ctx, "/pf", framework.WithChildren()))
}

// A child of the election path that is no participant but whose name sorts before every
// sequence number (an operator's "0") is not a participant (Observe: "Children whose names
// carry neither "latch-" nor "lock-" are not participants"; Participant.Leader: "the
// leader, or the one about to become leader"). The latch that Observe, Participants and
// Leader all name as the leader must then become leader: the latch "is leader while its
// node is first in line".
func TestLatchNamedLeaderLeadsBesideForeignChild(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/pf/foreign"
	_, err := c.Create(ctx, path+"/0", []byte("not a participant"), framework.WithParents())
	require.NoError(t, err)
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	obs, err := leader.Observe(octx, c, path)
	require.NoError(t, err)
	l := startLatch(t, c, path, "a")
	var seen leader.Participant
	for seen.ID != "a" {
		seen = next(t, obs, 10*time.Second, "observe")
	}
	require.True(t, seen.Leader)
	p, err := l.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", p.ID, "Leader")
	actx, acancel := context.WithTimeout(ctx, 10*time.Second)
	defer acancel()
	require.NoError(t, l.Await(actx), "Observe and Leader name latch a (node %s) the leader, but it never leads", p.Node)
	require.NoError(t, l.Close())
	ocancel()
	closes(t, obs, 10*time.Second)
	require.NoError(t, c.Delete(ctx, "/pf", framework.WithChildren()))
}
