package reliability_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// Partitions between servers (issue 17 item 4): the shared ensemble routes its peer
// traffic through zktest's fault proxies (see TestMain), so a fault can cut members off
// from each other while every client port stays reachable.

// peerFaultBound bounds how long a member takes to notice a cut (syncLimit is 5 s at the
// harness's tickTime) and the rest to elect, with slack for a loaded 2-core machine.
const peerFaultBound = 90 * time.Second

// moveVictimTo makes the victim's client connected to member i: if it is elsewhere, the
// proxy refuses the other members and drops the connection, and the client comes back
// through member i with its session. It returns once member i lists the victim's session.
func moveVictimTo(t *testing.T, e *env, i int) {
	t.Helper()
	sid := e.victim.SessionID()
	on := func() bool {
		ids, err := zktest.Sessions(ens.Addr(i))
		return err == nil && slices.Contains(ids, sid)
	}
	if on() {
		return
	}
	var others []string
	for j := 0; j < ens.Size(); j++ {
		if j != i {
			others = append(others, ens.Addr(j))
		}
	}
	e.proxy.Refuse(others...)
	e.proxy.DropConnections()
	require.Eventually(t, on, 60*time.Second, 20*time.Millisecond, "the victim's client comes back through member %d", i)
	e.proxy.Heal()
}

// waitCut waits until member out no longer serves and some other member leads.
func waitCut(t *testing.T, out int) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := zktest.Mode(ens.Addr(out))
		l, lerr := ens.Leader()
		return err != nil && lerr == nil && l != out
	}, peerFaultBound, 50*time.Millisecond, "member %d is cut off and the others lead", out)
}

// healPeers ends every cut and waits until every member serves again.
func healPeers(t *testing.T) {
	t.Helper()
	require.NoError(t, ens.HealPeers())
	ctx, cancel := context.WithTimeout(context.Background(), peerFaultBound)
	defer cancel()
	_, err := ens.WaitLeader(ctx)
	require.NoError(t, err)
}

// follower returns a member that is not the leader.
func follower(t *testing.T) (leader, f int) {
	t.Helper()
	leader, err := ens.Leader()
	require.NoError(t, err)
	return leader, (leader + 1) % ens.Size()
}

// isolateLeader cuts the leader off from both followers while the victim's client stays
// connected to the leader's client port; it returns once the followers lead and the old
// leader has stopped serving (and so closed the victim's connection).
func isolateLeader(t *testing.T, e *env) func() {
	leader, _ := follower(t)
	moveVictimTo(t, e, leader)
	require.NoError(t, ens.Isolate(leader))
	waitCut(t, leader)
	return func() { healPeers(t) }
}

// partitionFollower moves the victim's client to a follower and partitions that follower
// from the leader and the other follower.
func partitionFollower(t *testing.T, e *env) func() {
	leader, f := follower(t)
	moveVictimTo(t, e, f)
	var rest []int
	for j := 0; j < ens.Size(); j++ {
		if j != f {
			rest = append(rest, j)
		}
	}
	require.NoError(t, ens.Partition([]int{f}, rest))
	waitCut(t, f)
	_ = leader
	return func() { healPeers(t) }
}

// oneWayLeaderToFollower moves the victim's client to a follower that then stops hearing
// the leader, while the leader still hears it.
func oneWayLeaderToFollower(t *testing.T, e *env) func() {
	leader, f := follower(t)
	moveVictimTo(t, e, f)
	require.NoError(t, ens.CutOneWay(leader, f))
	waitCut(t, f)
	return func() { healPeers(t) }
}
