package doublebarrier_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A Leave on a server that lags does not take itself for the last member while another
// member is inside (REFERENCE.md: "A release or an admission never rests on a stale
// read"; double barrier Leave). W enters alone (memberQty 1) through a follower, which is
// then cut off from its peers; M enters through the leader (ready is there). W's server
// still lists W alone: a Leave that believed it would delete W's node and ready and
// return while M is inside. Leave syncs first, then sees M and waits for it.
//
// The cut is healed as soon as W's Leave sends its sync or, after its listing, its
// transaction (W's node and ready): before the fix that transaction then goes through
// and Leave returns nil with M inside; after it, Leave lists both members and watches a
// node (a getData) until M has left.
func TestLeaveOnLaggingServerWaitsForMemberItDoesNotSee(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3, zktest.WithPeerProxies())
	leader, err := ens.Leader()
	require.NoError(t, err)
	f := (leader + 1) % ens.Size()
	const path = "/lagging/leave"
	progressed := make(chan struct{}, 1)
	watching := make(chan struct{}, 1)
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	var leaving atomic.Bool // W's Leave has started
	x := testutil.Connect(t, ens.Addr(leader))
	w := testutil.Connect(t, ens.Addr(f), framework.WithSessionTimeout(60*time.Second),
		framework.WithRequestHook(func(op string) {
			if leaving.Load() && (op == "multi" || op == "sync") {
				signal(progressed)
			}
		}),
		framework.WithRequestObserver(func(r framework.RequestInfo) {
			if leaving.Load() && r.Op == "getData" {
				signal(watching)
			}
		}))
	ctx := testutil.Context(t, 2*time.Minute)

	mw := newMember(t, w, path, 1)
	require.NoError(t, mw.Enter(ctx))
	require.NoError(t, ens.Isolate(f))
	t.Cleanup(func() { _ = ens.HealPeers() })
	mm := newMember(t, x, path, 1)
	require.NoError(t, mm.Enter(ctx))

	leaving.Store(true)
	left := testutil.Go(ctx, mw.Leave)
	select {
	case <-progressed:
	case err := <-left:
		t.Fatalf("W's Leave returned before it sent a sync or a transaction: %v", err)
	case <-ctx.Done():
		t.Fatal("W's Leave sent neither a sync nor a transaction")
	}
	require.NoError(t, ens.HealPeers())
	select {
	case err := <-left:
		t.Fatalf("W's Leave returned (%v) while M is inside: it took itself for the last member on its lagging server's listing", err)
	case <-watching:
	case <-ctx.Done():
		t.Fatal("W's Leave neither returned nor watched M")
	}
	require.NoError(t, mm.Leave(ctx))
	require.NoError(t, testutil.Result(t, left, 20*time.Second, "W's Leave"))
	assertNoMembers(t, ens.Addr(leader), path, w, x)
}
