package leader_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// election is 2 latches and 2 auto-requeueing selectors per client, each kind on its own
// path, with a checker each.
type election struct {
	t         testing.TB
	latchPath string
	selPath   string
	clients   []*framework.Client
	latches   []*leader.Latch // index i belongs to clients[i/2]
	selectors []*leader.Selector
	lck, sck  *checker
	ctx       context.Context
	stop      context.CancelFunc
	errs      chan error
	followers int
}

func newElection(t testing.TB, clients []*framework.Client, latchPath, selPath string) *election {
	e := &election{t: t, latchPath: latchPath, selPath: selPath, clients: clients,
		lck: newChecker(), sck: newChecker(), errs: make(chan error, 100)}
	e.ctx, e.stop = context.WithCancel(context.Background())
	t.Cleanup(e.stop)
	for ci, c := range clients {
		for k := range 2 {
			e.addLatch(c, fmt.Sprintf("latch-%d-%d", ci, k))
			id := fmt.Sprintf("sel-%d-%d", ci, k)
			ck := e.sck
			s := startSelector(t, c, selPath, id, func(ctx context.Context) error {
				ck.enter(id, ctx.Done())
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(5+rand.IntN(20)) * time.Millisecond):
				}
				return nil
			}, leader.AutoRequeue())
			e.selectors = append(e.selectors, s)
		}
	}
	return e
}

func (e *election) addLatch(c *framework.Client, id string) *leader.Latch {
	l := startLatch(e.t, c, e.latchPath, id)
	e.latches = append(e.latches, l)
	e.followers++
	go followLatch(e.ctx, l, e.lck, e.errs)
	return l
}

// leaderLatch returns the index of the latch that leads now.
func (e *election) leaderLatch() int {
	var who int
	require.Eventually(e.t, func() bool {
		n := 0
		for i, l := range e.latches {
			if l.HasLeadership() {
				who, n = i, n+1
			}
		}
		return n == 1
	}, 20*time.Second, 10*time.Millisecond, "no single latch leads")
	return who
}

// waitBoth waits until both elections have begun new terms since the counts given.
func (e *election) waitBoth(nl, ns int, d time.Duration, what string) {
	e.t.Helper()
	start := time.Now()
	e.lck.waitNewTerm(e.t, nl, d, what+" (latch)")
	e.sck.waitNewTerm(e.t, ns, d, what+" (selector)")
	e.t.Logf("%s: after %v; latch terms %d, selector terms %d", what, time.Since(start), e.lck.count(), e.sck.count())
}

func (e *election) waitFull(d time.Duration) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		lp, err1 := e.latches[len(e.latches)-1].Participants(ctx)
		sp, err2 := e.selectors[0].Participants(ctx)
		return err1 == nil && err2 == nil && len(lp) == 6 && len(sp) >= 5 // a selector between turns may be out of line
	}, d, 50*time.Millisecond, "participants did not come back")
}

// finish closes everything and checks the checkers, the followers and the nodes left.
func (e *election) finish(connect string) {
	e.t.Helper()
	for _, s := range e.selectors {
		require.NoError(e.t, s.Close())
	}
	for _, l := range e.latches {
		require.NoError(e.t, l.Close())
	}
	e.stop()
	for range e.followers {
		select {
		case err := <-e.errs:
			require.NoError(e.t, err)
		case <-time.After(10 * time.Second):
			e.t.Fatal("a follower did not end")
		}
	}
	e.lck.assertOK(e.t)
	e.sck.assertOK(e.t)
	e.t.Logf("latch terms %d, selector terms %d", e.lck.count(), e.sck.count())
	assertNoChildren(e.t, connect, e.latchPath, e.clients...)
	assertNoChildren(e.t, connect, e.selPath, e.clients...)
}

// Exactly one leader at a time among 6 latches and among 6 selectors over 3 clients,
// through the leader's close and the leader's session expiry.
func TestOneLeaderCloseAndExpiry(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	var proxies []*zktest.Proxy
	var clients []*framework.Client
	for range 3 {
		p := zktest.NewProxy(t, srv.ConnectString())
		proxies = append(proxies, p)
		clients = append(clients, testutil.ConnectFailFast(t, p.ConnectString(), framework.WithSessionTimeout(2*time.Second)))
	}
	e := newElection(t, clients, "/leader/one/latch", "/leader/one/sel")
	e.waitBoth(0, 0, 20*time.Second, "first leaders")

	// The leader closes: leadership passes on at once. Its place is taken by a new latch.
	for round := range 3 {
		i := e.leaderLatch()
		n := e.lck.count()
		start := time.Now()
		require.NoError(t, e.latches[i].Close())
		e.lck.waitNewTerm(t, n, 3*time.Second, "a leader after the leader's close")
		t.Logf("round %d: leadership passed on in %v", round, time.Since(start))
		e.addLatch(clients[i/2], fmt.Sprintf("latch-%d-r%d", i/2, round))
		e.latches[i] = e.latches[len(e.latches)-1]
		e.latches = e.latches[:len(e.latches)-1]
	}
	e.waitFull(10 * time.Second)

	// The leading latch's client is cut off until the server expires its session.
	ci := e.leaderLatch() / 2 // latch i belongs to clients[i/2]
	sid := clients[ci].SessionID()
	nl, ns := e.lck.count(), e.sck.count()
	proxies[ci].Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sid]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire the session")
	e.waitBoth(nl, ns, 15*time.Second, "a leader after the leader's session expired")
	proxies[ci].Heal()
	e.waitFull(20 * time.Second)
	e.waitBoth(e.lck.count()-1, e.sck.count(), 15*time.Second, "leaders after the heal")
	e.finish(srv.ConnectString())
}

// Exactly one leader at a time through the loss of the ZooKeeper leader and of the
// quorum of a 3-member ensemble.
func TestOneLeaderEnsemble(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3)
	var clients []*framework.Client
	for range 3 {
		clients = append(clients, testutil.ConnectFailFast(t, ens.ConnectString()))
	}
	e := newElection(t, clients, "/leader/ens/latch", "/leader/ens/sel")
	e.waitBoth(0, 0, 20*time.Second, "first leaders")

	nl, ns := e.lck.count(), e.sck.count()
	killed, err := ens.KillLeader()
	require.NoError(t, err)
	t.Logf("killed ZooKeeper leader %d", killed)
	e.waitBoth(nl, ns, 20*time.Second, "leaders after the ZooKeeper leader was killed")

	stopped, err := ens.StopQuorum()
	require.NoError(t, err)
	t.Logf("stopped members %v", stopped)
	require.Eventually(t, func() bool {
		return len(e.lck.leaders()) == 0 && len(e.sck.leaders()) == 0
	}, 15*time.Second, 10*time.Millisecond, "leadership must end when the quorum is gone")
	nl, ns = e.lck.count(), e.sck.count()
	rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, ens.RestoreQuorum(rctx))
	e.waitBoth(nl, ns, 30*time.Second, "leaders after the quorum came back")
	e.waitFull(20 * time.Second)
	e.finish(ens.ConnectString())
}
