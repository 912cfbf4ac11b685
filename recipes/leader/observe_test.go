package leader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// next fails the test unless ch gives a value within d.
func next(t testing.TB, ch <-chan leader.Participant, d time.Duration, what string) leader.Participant {
	t.Helper()
	select {
	case p, ok := <-ch:
		require.True(t, ok, "%s: the channel closed", what)
		return p
	case <-time.After(d):
		t.Fatalf("%s: no value within %v", what, d)
		return leader.Participant{}
	}
}

// closes fails the test unless ch is closed within d (values before that are dropped).
func closes(t testing.TB, ch <-chan leader.Participant, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("the channel did not close within %v", d)
		}
	}
}

// TestObserveLatch: an observer that takes no part hears who leads a latch election, Go
// and Curator participants alike, each change once, and nobody when the last one leaves.
func TestObserveLatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := curator(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	obs := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/leader/observe"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := leader.Observe(ctx, obs, path)
	require.NoError(t, err)
	require.Equal(t, leader.Participant{}, next(t, ch, 20*time.Second, "before the election"))

	a := startLatch(t, c, path, "a")
	p := next(t, ch, 20*time.Second, "a joins")
	assert.Equal(t, "a", p.ID)
	assert.True(t, p.Leader)
	assert.Equal(t, a.Node(), p.Node)

	b := startLatch(t, c, path, "b")
	do(t, tool, "latch.new j %s java-1", path)
	do(t, tool, "latch.start j")
	testutil.WaitParticipants(t, b, 3, 20*time.Second)
	// Someone joining behind the leader changes nothing: the next value is b's, once a
	// has gone.
	require.NoError(t, a.Close())
	p = next(t, ch, 20*time.Second, "a leaves")
	assert.Equal(t, "b", p.ID)
	assert.Equal(t, b.Node(), p.Node)

	require.NoError(t, b.Close())
	p = next(t, ch, 20*time.Second, "b leaves")
	assert.Equal(t, "java-1", p.ID, "Curator's participant id")
	// Curator 5.4's LeaderLatch may reset when the node before its own goes: it deletes
	// its node and makes a new one (CURATOR-644), which an observer rightly reports as a
	// change of node. So the node is compared by its owner, and values of Curator's
	// participant may come before the election is empty.
	assert.True(t, strings.HasPrefix(p.Node, path+"/") && strings.Contains(p.Node, "-latch-"), "Curator's latch node: %s", p.Node)

	do(t, tool, "latch.close j")
	for {
		p = next(t, ch, 20*time.Second, "the last one leaves")
		if p == (leader.Participant{}) {
			break
		}
		require.Equal(t, "java-1", p.ID, "only Curator's latch, making a new node, may show before the election is empty")
	}
	// A closed Curator 5.4 LeaderLatch can still make a node when its close races its own
	// children callback (CURATOR-3); it lives until the session ends. Ending the session, as
	// a Curator application does on shutdown, removes it; until then the observer may
	// report it.
	require.NoError(t, tool.Close())

	c2 := startLatch(t, c, path, "c")
	for {
		p = next(t, ch, 20*time.Second, "c joins an empty election")
		if p.ID == "c" {
			break
		}
		require.True(t, p.ID == "java-1" || p == (leader.Participant{}), "unexpected participant %+v", p)
	}
	require.NoError(t, c2.Close())
	assert.Equal(t, leader.Participant{}, next(t, ch, 20*time.Second, "c leaves"))

	cancel()
	closes(t, ch, 20*time.Second)
	assertNoChildren(t, srv.ConnectString(), path, c)
}

// TestObserveSelector: Observe on a selector's path follows the lock's holders.
func TestObserveSelector(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/leader/observe-selector"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	fa, ta := turns("a")
	a := startSelector(t, c, path, "a", fa)
	tra := nextTurn(t, ta, 20*time.Second, "a leads")
	ch, err := leader.Observe(ctx, c, path)
	require.NoError(t, err)
	p := next(t, ch, 20*time.Second, "a leads")
	assert.Equal(t, "a", p.ID)
	assert.True(t, p.Leader)

	fb, tb := turns("b")
	b := startSelector(t, c, path, "b", fb)
	testutil.WaitParticipants(t, b, 2, 20*time.Second)
	close(tra.release)
	trb := nextTurn(t, tb, 20*time.Second, "b leads")
	p = next(t, ch, 20*time.Second, "a gave up")
	assert.Equal(t, "b", p.ID)
	close(trb.release)
	assert.Equal(t, leader.Participant{}, next(t, ch, 20*time.Second, "b gave up"))

	// The client closing ends the observation too.
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	assertNoChildren(t, srv.ConnectString(), path, c)
	require.NoError(t, c.Close())
	closes(t, ch, 20*time.Second)
}

// TestObserveArguments: bad arguments fail at once.
func TestObserveArguments(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := context.Background()
	_, err := leader.Observe(ctx, nil, "/x")
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	for _, path := range []string{"", "x", "/x/", "/", "/zookeeper"} {
		_, err := leader.Observe(ctx, c, path)
		assert.Error(t, err, "path %q", path)
	}
}

// TestObserveClosedClient: observing with a closed client fails at once with an error
// matching framework.ErrClosed (and leader.ErrClosed), not with a channel that closes
// without a word.
func TestObserveClosedClient(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	require.NoError(t, c.Close())
	ch, err := leader.Observe(context.Background(), c, "/election")
	require.ErrorIs(t, err, framework.ErrClosed)
	assert.ErrorIs(t, err, leader.ErrClosed)
	assert.Nil(t, ch)
}
