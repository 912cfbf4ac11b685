package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestRevocableLatch: a leading latch asked to let go (__REVOKE__ written into its node by
// another client) hears it and closes; the next participant leads (CURATOR-171, issue
// 16.7). A request to a latch that does not lead yet is heard once it leads.
func TestRevocableLatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, srv.ConnectString())
	other := testutil.Connect(t, srv.ConnectString())
	const path = "/leader/revocable"

	revoked := make(chan string, 2)
	letGo := leader.WithLatchRevocationListener(func(l *leader.Latch) {
		revoked <- l.ID()
		_ = l.Close()
	})
	a := startLatch(t, c, path, "a", letGo)
	term := await(t, a, 20*time.Second, "a leads")
	b := startLatch(t, c, path, "b", letGo)
	parts := testutil.WaitParticipants(t, b, 2, 20*time.Second)
	// b is asked before it leads: it hears it once it does.
	require.NoError(t, leader.Revoke(ctx, other, parts[1].Node))
	cl := startLatch(t, c, path, "c")
	testutil.WaitParticipants(t, cl, 3, 20*time.Second)

	require.NoError(t, leader.Revoke(ctx, other, term.Node()))
	for _, want := range []string{"a", "b"} {
		select {
		case id := <-revoked:
			assert.Equal(t, want, id)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not hear the revocation", want)
		}
	}
	testutil.WaitClosed(t, term.Done(), 20*time.Second, "a's term")
	await(t, cl, 20*time.Second, "c leads once a and b let go")
	assert.Empty(t, revoked)
	require.NoError(t, cl.Close())
	assertNoChildren(t, srv.ConnectString(), path, c)
}

// TestRevocableSelector: a leading selector asked to let go interrupts its function;
// the next one leads.
func TestRevocableSelector(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, srv.ConnectString())
	const path = "/leader/revocable-selector"

	fa, ta := turns("a")
	a, err := leader.NewSelector(c, path, "a", fa, leader.WithSelectorRevocationListener(func(s *leader.Selector) {
		s.Interrupt()
	}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	require.NoError(t, a.Start(context.Background()))
	tra := nextTurn(t, ta, 20*time.Second, "a leads")

	fb, tb := turns("b")
	b := startSelector(t, c, path, "b", fb)
	parts := testutil.WaitParticipants(t, b, 2, 20*time.Second)
	require.Equal(t, "a", parts[0].ID)

	require.NoError(t, leader.Revoke(ctx, c, parts[0].Node))
	testutil.WaitClosed(t, tra.ctx.Done(), 20*time.Second, "a's function context")
	trb := nextTurn(t, tb, 20*time.Second, "b leads once a let go")
	close(trb.release)
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	assertNoChildren(t, srv.ConnectString(), path, c)
}
