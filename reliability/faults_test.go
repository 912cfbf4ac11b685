package reliability_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fault is one kind of misbehaviour. inject starts it and returns the function that heals
// it; hold is how long it lasts. unnoticeable marks a fault a client cannot see coming: a
// stopped (SIGSTOP) leader that, resumed, expires the sessions it did not hear from while
// it was stopped — including sessions whose clients, served by a follower, were never
// disconnected. A holder learns of that only as the next holder gets the lock, so the
// overlap checker does not apply (the "faults the client can notice"); fencing,
// liveness and cleanliness still do. shared marks a fault that acts on the whole ensemble
// and not on the scenario's env (inject ignores its env): TestUnderFaults injects it once
// for every scenario that runs under it at the same time (batch_test.go).
type fault struct {
	name         string
	hold         time.Duration
	unnoticeable bool
	shared       bool
	inject       func(t *testing.T, e *env) (heal func())
}

var faults = []fault{
	{name: "none", inject: func(*testing.T, *env) func() { return func() {} }},
	{name: "drop-connections", inject: func(_ *testing.T, e *env) func() {
		e.proxy.DropConnections()
		return func() {}
	}},
	{name: "short-stall", hold: victimSession / 2, inject: func(_ *testing.T, e *env) func() {
		e.proxy.Stall()
		return e.proxy.Heal
	}},
	{name: "long-stall-session-expires", hold: 2*victimSession + time.Second, inject: func(_ *testing.T, e *env) func() {
		e.proxy.Stall()
		return e.proxy.Heal
	}},
	{name: "kill-leader", shared: true, hold: time.Second, inject: func(t *testing.T, e *env) func() {
		i, err := ens.KillLeader()
		require.NoError(t, err)
		return func() { require.NoError(t, ens.Restart(i)) }
	}},
	{name: "lose-quorum", shared: true, hold: 2 * time.Second, inject: func(t *testing.T, e *env) func() {
		_, err := ens.StopQuorum()
		require.NoError(t, err)
		return func() {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			require.NoError(t, ens.RestoreQuorum(ctx))
		}
	}},
	{name: "pause-leader", hold: 3 * time.Second, unnoticeable: true, shared: true, inject: func(t *testing.T, e *env) func() {
		i, err := ens.Leader()
		require.NoError(t, err)
		require.NoError(t, ens.Pause(i))
		return func() { require.NoError(t, ens.Resume(i)) }
	}},
	{name: "ghost-create", inject: func(_ *testing.T, e *env) func() {
		e.proxy.DropNextCreateReply()
		return func() {}
	}},
}

// peerFaults cut members of the ensemble off from each other while every client port
// stays reachable (partition_test.go): inject returns once the cut-off member has stopped
// serving; hold then lets the victim's session expire if it does not come back through
// another member in time. A victim on a cut-off follower cannot notice in time: the
// follower answers its pings until it notices the cut (syncLimit × tickTime, 5 s) while
// the leader expires its session after victimSession (2 s)
// (TestMutexCutOffServerMargin/partitioned-follower measures it). Each costs about 10 s
// per scenario, so the fast profile runs them on the mutex and the leader latch only;
// the soak and -partitions run them everywhere (see scenarioFaults).
var peerFaults = []fault{
	{name: "isolate-leader", hold: victimSession + time.Second, inject: isolateLeader},
	{name: "partition-follower", hold: victimSession / 2, unnoticeable: true, inject: partitionFollower},
	{name: "one-way-leader-to-follower", hold: victimSession / 2, unnoticeable: true, inject: oneWayLeaderToFollower},
}
