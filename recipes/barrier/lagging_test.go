package barrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A waiter whose server lags never passes a barrier that is set (REFERENCE.md:
// "A release or an admission never rests on a stale read"). The waiter's server, a
// follower, is cut off from its peers; the barrier is set through the leader, which
// commits it with the other follower. Until the cut-off follower notices the silence
// (syncLimit, 5 s in zktest) it still answers its clients from its old state: the barrier
// "not set". Wait must not return nil on that answer: it syncs first, which the cut-off
// follower cannot answer, so Wait waits until its context ends.
func TestWaitOnLaggingServerDoesNotPassSetBarrier(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3, zktest.WithPeerProxies())
	leader, err := ens.Leader()
	require.NoError(t, err)
	f := (leader + 1) % ens.Size()
	setter := testutil.Connect(t, ens.Addr(leader))
	waiter := testutil.Connect(t, ens.Addr(f), framework.WithSessionTimeout(30*time.Second))
	ctx := testutil.Context(t, time.Minute)
	_, err = waiter.Exists(ctx, "/") // connected to f
	require.NoError(t, err)

	require.NoError(t, ens.Isolate(f))
	t.Cleanup(func() { _ = ens.HealPeers() })
	require.NoError(t, newBarrier(t, setter, "/gate").Set(ctx))

	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = newBarrier(t, waiter, "/gate").Wait(wctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "Wait passed a barrier that is set, on its server's stale answer")
}
