package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestLatchCloseFromListener: "on leadership, shut down" — Latch.Close called from a
// latch listener returns (issue 15.1).
func TestLatchCloseFromListener(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	l := newLatch(t, c, "/leader/closelistener", "a")
	closed := make(chan error, 1)
	l.AddListener(func(isLeader bool) {
		if isLeader {
			closed <- l.Close()
		}
	})
	ctx := testutil.Context(t, 30*time.Second)
	require.NoError(t, l.Start(ctx))
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Latch.Close from a listener did not return")
	}
	assertNoChildren(t, srv.ConnectString(), "/leader/closelistener", c)
}

// TestSelectorCloseFromFunction: Selector.Close called from the selector's function
// returns (issue 15.1).
func TestSelectorCloseFromFunction(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	closed := make(chan error, 1)
	var s *leader.Selector
	s, err := leader.NewSelector(c, "/leader/closefn", "a", func(context.Context) error {
		closed <- s.Close()
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, s.Start(testutil.Context(t, 30*time.Second)))
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Selector.Close from its function did not return")
	}
	require.NoError(t, s.Close(), "a second Close waits for the selector to stop")
	assertNoChildren(t, srv.ConnectString(), "/leader/closefn", c)
}
