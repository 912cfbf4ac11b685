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
