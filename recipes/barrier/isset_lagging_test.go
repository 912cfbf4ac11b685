package barrier_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// IsSet: "IsSet reports whether the barrier is set now." The checker's server, a
// follower, is cut off from its peers; the barrier is set through the leader, which
// commits it with the other follower, and Set returns. The cut-off follower still answers
// from its old state until it notices the silence (syncLimit). IsSet must not report
// "not set" for a barrier that is set now (as Wait does not pass it: the package syncs
// before any read that may say "not set"); it may wait or fail instead.
func TestIsSetOnLaggingServerDoesNotReportSetBarrierUnset(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3, zktest.WithPeerProxies())
	leader, err := ens.Leader()
	require.NoError(t, err)
	f := (leader + 1) % ens.Size()
	setter := testutil.Connect(t, ens.Addr(leader))
	checker := testutil.Connect(t, ens.Addr(f), framework.WithSessionTimeout(30*time.Second))
	ctx := testutil.Context(t, time.Minute)
	_, err = checker.Exists(ctx, "/") // connected to f
	require.NoError(t, err)

	require.NoError(t, ens.Isolate(f))
	t.Cleanup(func() { _ = ens.HealPeers() })
	require.NoError(t, newBarrier(t, setter, "/gate").Set(ctx))
	st, err := setter.Exists(ctx, "/gate")
	require.NoError(t, err)
	require.NotNil(t, st, "the barrier is set on the leader")

	set, err := newBarrier(t, checker, "/gate").IsSet(ctx)
	if err == nil {
		require.True(t, set, "IsSet reported a barrier that is set (committed, Set returned) as not set, from its server's stale state")
	}
}
