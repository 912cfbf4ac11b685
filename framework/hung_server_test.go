package framework_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A member that hangs (SIGSTOP: its kernel still accepts connections, nothing answers)
// must not cost a client its session while a quorum is healthy: the client gives up the
// handshake with the hung member in time and moves to a healthy one, keeping its
// session and its ephemeral node, and never reports Lost.
//
// The client knows the two followers, each behind its own proxy. The follower it is on
// is paused and its connection dropped; the other follower refuses connections until the
// client has come back to the hung one (go-zookeeper tries its servers in a shuffled
// order; the refusal makes the hung member the one it tries next), then serves again.
func TestHungMemberClientMovesOn(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	leader, err := ens.WaitLeader(ctx)
	require.NoError(t, err)

	var members []int // the followers, each behind its own proxy
	proxies := map[int]*zktest.Proxy{}
	var connect []string
	for i := 0; i < ens.Size(); i++ {
		if i == leader {
			continue
		}
		members = append(members, i)
		proxies[i] = zktest.NewProxy(t, ens.Addr(i))
		connect = append(connect, proxies[i].ConnectString())
	}

	const session = 20 * time.Second
	c, err := framework.New(strings.Join(connect, ","), framework.WithSessionTimeout(session),
		framework.WithConnectionTimeout(5*time.Second), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	rec := recordStates(c)
	require.NoError(t, c.Start())
	defer c.Close()
	require.NoError(t, c.BlockUntilConnected(ctx))
	_, sid := c.Session()
	_, err = c.Create(ctx, "/hung-member", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	on, other := -1, -1
	for _, i := range members {
		sessions, err := zktest.Sessions(ens.Addr(i))
		require.NoError(t, err)
		if slices.Contains(sessions, sid) {
			on = i
		} else {
			other = i
		}
	}
	require.NotEqual(t, -1, on, "session 0x%x is on no follower", sid)
	require.NotEqual(t, -1, other)

	t.Cleanup(func() { _ = ens.Resume(on) })
	before := proxies[on].Accepted()
	proxies[other].Refuse()
	require.NoError(t, ens.Pause(on))
	proxies[on].DropConnections()

	// The client comes back to the hung member (the other one refuses it) ...
	deadline := time.Now().Add(2 * time.Minute)
	for proxies[on].Accepted() == before {
		require.True(t, time.Now().Before(deadline), "the client never came back to the hung member")
		select {
		case <-rec.signal:
		case <-time.After(20 * time.Millisecond):
		}
	}
	// ... and must not wait there for the healthy one, which serves from now on.
	proxies[other].Heal()

	// Reconnected or Lost decides; the bound only stops a test that hangs.
	failAt := time.After(2 * time.Minute)
	for !slices.Contains(rec.get(), framework.Reconnected) {
		require.NotContains(t, rec.get(), framework.Lost, "the client lost its session although a quorum was healthy")
		select {
		case <-rec.signal:
		case <-failAt:
			t.Fatalf("neither reconnected nor lost within 2m; states %v", rec.get())
		}
	}
	_, sid2 := c.Session()
	assert.Equal(t, sid, sid2, "the client must keep its session")
	st, err := c.Exists(ctx, "/hung-member")
	require.NoError(t, err)
	require.NotNil(t, st, "the session's ephemeral node must survive")
	assert.Equal(t, sid, st.EphemeralOwner)
	assert.NotContains(t, rec.get(), framework.Lost)
	sessions, err := zktest.Sessions(ens.Addr(other))
	require.NoError(t, err)
	assert.Contains(t, sessions, sid, "the client moved to the healthy member")

	require.NoError(t, c.Delete(ctx, "/hung-member"))
}
