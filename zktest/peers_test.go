package zktest_test

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// serves reports whether member i answers srvr with a mode (it serves clients).
func serves(e *zktest.Ensemble, i int) bool {
	_, err := zktest.Mode(e.Addr(i))
	return err == nil
}

// waitFor polls cond every 50 ms until it holds or d passes (server state, not a guess
// at how long something takes).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, d, 50*time.Millisecond, what)
}

// TestEnsemblePeerFaults isolates the leader from its followers while a client stays
// connected to it, partitions a follower away, and cuts one direction only; after each
// heal, every member serves again and a client of every member can write.
func TestEnsemblePeerFaults(t *testing.T) {
	e := zktest.NewEnsemble(t, 3, zktest.WithPeerProxies())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	leader, err := e.WaitLeader(ctx)
	require.NoError(t, err)

	// A client of the leader's own client port only.
	conn, events := connect(t, e.Addr(leader), 4*time.Second, nil)
	_, err = conn.Create("/before", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	require.NoError(t, e.Isolate(leader))
	// The followers elect a leader among themselves; the isolated one stops serving and
	// its client is disconnected although its client port is reachable.
	// They notice the cut after syncLimit (5 s) and elect in well under a second (5.4–6.0 s
	// in 12 of 12 rounds here); 60 s is slack for a loaded machine, not an election's length.
	waitFor(t, 60*time.Second, "a new leader among the followers", func() bool {
		i, err := e.Leader()
		return err == nil && i != leader
	})
	waitFor(t, 60*time.Second, "the isolated leader stops serving", func() bool { return !serves(e, leader) })
	waitState(t, events, zk.StateDisconnected, 60*time.Second)
	for i := 0; i < e.Size(); i++ {
		if i != leader {
			assert.True(t, serves(e, i), "member %d of the majority serves", i)
		}
	}

	require.NoError(t, e.HealPeers())
	_, err = e.WaitLeader(ctx)
	require.NoError(t, err)
	writeOnEvery(t, e)

	// A follower partitioned away stops serving; the other two go on.
	leader, err = e.WaitLeader(ctx)
	require.NoError(t, err)
	follower := (leader + 1) % e.Size()
	other := (leader + 2) % e.Size()
	require.NoError(t, e.Partition([]int{follower}, []int{leader, other}))
	waitFor(t, 60*time.Second, "the partitioned follower stops serving", func() bool { return !serves(e, follower) })
	now, err := e.Leader()
	require.NoError(t, err)
	assert.Equal(t, leader, now, "the majority keeps its leader")
	require.NoError(t, e.HealPeers())
	_, err = e.WaitLeader(ctx)
	require.NoError(t, err)
	writeOnEvery(t, e)

	// One way: the follower no longer hears the leader (the leader still hears it).
	leader, err = e.WaitLeader(ctx)
	require.NoError(t, err)
	follower = (leader + 1) % e.Size()
	require.NoError(t, e.CutOneWay(leader, follower))
	waitFor(t, 60*time.Second, "the follower that no longer hears the leader stops serving", func() bool { return !serves(e, follower) })
	require.NoError(t, e.HealPeers())
	_, err = e.WaitLeader(ctx)
	require.NoError(t, err)
	writeOnEvery(t, e)
}

// writeOnEvery writes through a client of each member's client port.
func writeOnEvery(t *testing.T, e *zktest.Ensemble) {
	t.Helper()
	for i := 0; i < e.Size(); i++ {
		c, _ := connect(t, e.Addr(i), 4*time.Second, nil)
		_, err := c.Create("/healed-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		require.NoError(t, err, "member %d", i)
		c.Close()
	}
}

func TestEnsemblePeerFaultsBadInput(t *testing.T) {
	var e zktest.Ensemble // started without peer proxies
	assert.ErrorIs(t, e.Isolate(0), zktest.ErrUnsupported)
	assert.ErrorIs(t, e.Partition([]int{0}), zktest.ErrUnsupported)
	assert.ErrorIs(t, e.CutOneWay(0, 1), zktest.ErrUnsupported)
	assert.ErrorIs(t, e.HealPeers(), zktest.ErrUnsupported)
}

// Refuse with targets refuses those servers only; Heal lets them through again.
func TestProxyRefuseTargets(t *testing.T) {
	e := zktest.NewEnsemble(t, 3)
	p := zktest.NewProxy(t, e.ConnectString())
	dial := p.Dialer()
	p.Refuse(e.Addr(0))
	_, err := dial("tcp", e.Addr(0), 5*time.Second)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	c, err := dial("tcp", e.Addr(1), 5*time.Second)
	require.NoError(t, err, "a server not named is not refused")
	c.Close()

	// A client that must come back (DropConnections) comes back through the others.
	conn, events := connect(t, e.ConnectString(), 10*time.Second, dial)
	p.DropConnections()
	waitState(t, events, zk.StateHasSession, 30*time.Second)
	ids, err := zktest.Sessions(e.Addr(0))
	require.NoError(t, err)
	assert.NotContains(t, ids, conn.SessionID())

	p.Heal()
	c, err = dial("tcp", e.Addr(0), 5*time.Second)
	require.NoError(t, err, "Heal ends the refusal")
	c.Close()
}

// TrackedSessions on the leader lists a session whose client is connected to a follower
// (Sessions lists only the sessions connected to the server asked), and no longer once
// the session is closed.
func TestTrackedSessionsOnLeaderListsEverySession(t *testing.T) {
	e := zktest.NewEnsemble(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := e.WaitLeader(ctx)
	require.NoError(t, err)
	follower := (leader + 1) % 3
	conn, _ := connect(t, e.Addr(follower), 10*time.Second, nil) // (it waits for the session)
	sid := conn.SessionID()
	// The leader tracks the session once it applied the session's creation, which may
	// follow the follower's answer to the client.
	require.Eventually(t, func() bool {
		ids, err := zktest.TrackedSessions(e.Addr(leader))
		return err == nil && slices.Contains(ids, sid)
	}, 30*time.Second, 20*time.Millisecond, "the leader does not track the session")
	ids, err := zktest.Sessions(e.Addr(leader))
	require.NoError(t, err)
	assert.NotContains(t, ids, sid, "not connected to the leader")
	conn.Close()
	require.Eventually(t, func() bool {
		ids, err := zktest.TrackedSessions(e.Addr(leader))
		return err == nil && !slices.Contains(ids, sid)
	}, 30*time.Second, 20*time.Millisecond, "the closed session is still tracked")
}
