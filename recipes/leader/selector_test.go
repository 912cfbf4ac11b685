package leader_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// turn is one leadership of a test selector: it lasts until release is closed or the
// context is cancelled.
type turn struct {
	id      string
	ctx     context.Context
	release chan struct{}
}

// turns makes a leadership function that reports each turn on the returned channel.
func turns(id string) (func(context.Context) error, <-chan *turn) {
	ch := make(chan *turn, 100)
	return func(ctx context.Context) error {
		tr := &turn{id: id, ctx: ctx, release: make(chan struct{})}
		ch <- tr
		select {
		case <-tr.release:
		case <-ctx.Done():
		}
		return nil
	}, ch
}

func nextTurn(t testing.TB, ch <-chan *turn, d time.Duration, what string) *turn {
	t.Helper()
	select {
	case tr := <-ch:
		return tr
	case <-time.After(d):
		t.Fatalf("%s: no leadership within %v", what, d)
		return nil
	}
}

func noTurn(t testing.TB, ch <-chan *turn, d time.Duration, what string) {
	t.Helper()
	select {
	case tr := <-ch:
		t.Fatalf("%s: %s took leadership", what, tr.id)
	case <-time.After(d):
	}
}

func startSelector(t testing.TB, c *framework.Client, path, id string, fn func(context.Context) error, opts ...leader.SelectorOption) *leader.Selector {
	t.Helper()
	s, err := leader.NewSelector(c, path, id, fn, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Start(context.Background()))
	return s
}

func TestSelectorBasics(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ca, cb := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/leader/selector-basics"
	ctx := testutil.Context(t, 60*time.Second)

	fa, ta := turns("a")
	a := startSelector(t, ca, path, "a", fa, leader.AutoRequeue())
	trA := nextTurn(t, ta, 10*time.Second, "a alone")
	require.True(t, a.HasLeadership())

	fb, tb := turns("b")
	b := startSelector(t, cb, path, "b", fb, leader.AutoRequeue())
	testutil.WaitParticipants(t, a, 2, 20*time.Second) // Start queues in the background: keep the order known
	fc, tc := turns("c")
	c := startSelector(t, cb, path, "c", fc) // leads once
	parts := testutil.WaitParticipants(t, a, 3, 20*time.Second)
	require.Equal(t, []string{"a", "b", "c"}, ids(parts))
	require.True(t, parts[0].Leader)
	for _, p := range parts {
		require.Regexp(t, lockNode, framework.NodeName(p.Node))
	}
	ld, err := c.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", ld.ID)
	require.False(t, b.HasLeadership())
	noTurn(t, tb, 200*time.Millisecond, "while a leads")

	// Interrupt: a's context is cancelled, b leads, a queues again behind c.
	a.Interrupt()
	testutil.WaitClosed(t, trA.ctx.Done(), 5*time.Second, "a's context after Interrupt")
	trB := nextTurn(t, tb, 5*time.Second, "b after a's interrupt")
	require.Equal(t, []string{"b", "c", "a"}, ids(testutil.WaitParticipants(t, b, 3, 20*time.Second)))
	require.False(t, a.HasLeadership())

	// fn returns: c leads next, once; then a.
	close(trB.release)
	trC := nextTurn(t, tc, 5*time.Second, "c after b returned")
	require.Equal(t, []string{"c", "a", "b"}, ids(testutil.WaitParticipants(t, b, 3, 20*time.Second)))
	close(trC.release)
	trA = nextTurn(t, ta, 5*time.Second, "a after c returned")
	require.Equal(t, []string{"a", "b"}, ids(testutil.WaitParticipants(t, b, 2, 20*time.Second)), "c leads once without AutoRequeue")
	require.NoError(t, c.Requeue())
	require.Equal(t, []string{"a", "b", "c"}, ids(testutil.WaitParticipants(t, b, 3, 20*time.Second)))

	// Closing the leader hands leadership on at once: through the delete of a's node, not
	// an expiry of a's session (which stays the same throughout).
	sessA := ca.SessionID()
	require.NoError(t, a.Close())
	require.True(t, testutil.IsClosed(trA.ctx.Done()))
	trB = nextTurn(t, tb, 5*time.Second, "b after a's close")
	require.Equal(t, sessA, ca.SessionID(), "b leads while a's session is alive: a's Close handed over")
	require.NoError(t, c.Close())
	require.NoError(t, b.Close())
	require.True(t, testutil.IsClosed(trB.ctx.Done()))
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

// A leadership function that fails or panics gives leadership up like one that returns.
func TestSelectorFnFails(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	cl := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/leader/selector-fails"
	calls := make(chan int, 10)
	n := 0
	s := startSelector(t, cl, path, "s", func(ctx context.Context) error {
		n++
		calls <- n
		if n == 1 {
			return errors.New("boom")
		}
		if n == 2 {
			panic("boom")
		}
		<-ctx.Done()
		return ctx.Err()
	}, leader.AutoRequeue())
	for want := 1; want <= 3; want++ {
		select {
		case got := <-calls:
			require.Equal(t, want, got)
		case <-time.After(10 * time.Second):
			t.Fatalf("call %d did not come", want)
		}
	}
	require.True(t, s.HasLeadership())
	require.NoError(t, s.Close())
	require.False(t, s.HasLeadership())
	assertNoChildren(t, srv.ConnectString(), path, cl)
}

// The leader's lease ends on Suspended (standard policy): its context is cancelled, and it
// leads again once reconnected.
func TestSelectorSuspended(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cl := testutil.ConnectFailFast(t, proxy.ConnectString())
	const path = "/leader/selector-suspended"
	f, ts := turns("s")
	s := startSelector(t, cl, path, "s", f, leader.AutoRequeue())
	tr := nextTurn(t, ts, 10*time.Second, "s")
	proxy.DropConnections()
	testutil.WaitClosed(t, tr.ctx.Done(), 10*time.Second, "the leadership context after Suspended")
	nextTurn(t, ts, 15*time.Second, "s after the reconnection")
	require.NoError(t, s.Close())
	assertNoChildren(t, srv.ConnectString(), path, cl)
}

// The selector's function can fence its writes: SelectorToken strictly increases from one
// leader to the next, and a context without leadership has none.
func TestSelectorToken(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	_, err := leader.SelectorToken(ctx)
	require.ErrorIs(t, err, leader.ErrNotLeader)

	tokens := make(chan int64, 4)
	fn := func(ctx context.Context) error {
		tok, err := leader.SelectorToken(ctx)
		if err != nil {
			tok = -1
		}
		tokens <- tok
		return nil // give leadership up at once
	}
	var got []int64
	for _, id := range []string{"a", "b"} {
		s, err := leader.NewSelector(c, "/leader/token", id, fn)
		require.NoError(t, err)
		require.NoError(t, s.Start(ctx))
		select {
		case tok := <-tokens:
			got = append(got, tok)
		case <-time.After(20 * time.Second):
			t.Fatal("the selector never led")
		}
		require.NoError(t, s.Close())
	}
	require.Positive(t, got[0])
	require.Greater(t, got[1], got[0], "a later leader has a larger token")
	testutil.RequireNoChildren(t, srv.ConnectString(), "/leader/token")
}
