package leader_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// laggingSetup is a 3-member ensemble with peer proxies: lead is a client of the leader;
// lagging is a client of a follower f only, through proxy (whose replies a test can hold),
// with a session that outlives the follower's cut.
type laggingSetup struct {
	ens     *zktest.Ensemble
	f       int
	lead    *framework.Client
	lagging *framework.Client
	proxy   *zktest.Proxy
}

func newLaggingSetup(t *testing.T) laggingSetup {
	t.Helper()
	ens := zktest.NewEnsemble(t, 3, zktest.WithPeerProxies())
	leader, err := ens.Leader()
	require.NoError(t, err)
	f := (leader + 1) % ens.Size()
	proxy := zktest.NewProxy(t, ens.Addr(f))
	t.Cleanup(func() { _ = ens.HealPeers() })
	return laggingSetup{
		ens:     ens,
		f:       f,
		lead:    testutil.Connect(t, ens.Addr(leader)),
		lagging: testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(40*time.Second)),
		proxy:   proxy,
	}
}

// events records what a latch's listener was told.
type events struct {
	mu   sync.Mutex
	told []bool
}

func (e *events) add(isLeader bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.told = append(e.told, isLeader)
}

func (e *events) everLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, b := range e.told {
		if b {
			return true
		}
	}
	return false
}

// TestLatchOnLaggingServerDoesNotClaimLeadership: latch b waits behind a, through a
// follower; c waits behind b, through the leader. The follower hears of a's deletion (b's
// watch event is held on the way), then is cut off from its peers; b's node is then
// deleted by someone else, and c leads. When b hears of a's deletion, its server still
// answers from its old state (syncLimit, 5 s in zktest, before it notices the cut): a
// listing with b first, b's node there. b must not claim leadership on that (REFERENCE.md:
// "A release or an admission never rests on a stale read"): it syncs first, which the
// cut-off follower cannot answer. Once the cut heals, b finds its node gone and queues
// behind c; its listener was never told it leads.
func TestLatchOnLaggingServerDoesNotClaimLeadership(t *testing.T) {
	leakcheck.Check(t)
	s := newLaggingSetup(t)
	const path = "/lagging/latch"
	ctx := testutil.Context(t, 2*time.Minute)
	a := startLatch(t, s.lead, path, "a")
	await(t, a, 20*time.Second, "a leads")
	b := newLatch(t, s.lagging, path, "b")
	var told events
	b.AddListener(told.add)
	require.NoError(t, b.Start(ctx))
	c := startLatch(t, s.lead, path, "c")
	ps, err := c.Participants(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, ids(ps))
	bNode := ps[1].Node

	s.proxy.HoldReplies()
	require.NoError(t, a.Close())
	require.Eventually(t, func() bool {
		kids, err := zktest.Children(ctx, s.ens.Addr(s.f), path)
		return err == nil && len(kids) == 2
	}, 20*time.Second, 20*time.Millisecond, "the follower did not apply a's deletion")
	require.NoError(t, s.ens.Isolate(s.f))
	require.NoError(t, s.lead.Delete(ctx, bNode))
	await(t, c, 20*time.Second, "c leads once a and b are gone")

	s.proxy.Heal() // b hears of a's deletion, from its server's old state
	time.Sleep(2 * time.Second)
	require.False(t, told.everLeader(), "b claimed leadership on its cut-off server's stale answer while c leads")
	require.False(t, b.HasLeadership())

	require.NoError(t, s.ens.HealPeers())
	require.Eventually(t, func() bool {
		ps, err := c.Participants(ctx)
		return err == nil && len(ps) == 2 && ps[0].ID == "c" && ps[1].ID == "b"
	}, 60*time.Second, 50*time.Millisecond, "b is not back in line behind c")
	require.True(t, c.HasLeadership())
	require.False(t, told.everLeader(), "b was told it leads")
}
