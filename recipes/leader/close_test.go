package leader_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestLatchCloseFromListener: "on leadership, shut down" — Latch.Close called from a
// latch listener returns.
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
// returns.
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

// TestLatchSecondCloseWaitsForListener: a Close from outside waits for the listener
// goroutine even when a listener's own Close came first: the
// listener closes the latch and then keeps running; an outside Close must not return
// before it ends.
func TestLatchSecondCloseWaitsForListener(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	l := newLatch(t, c, "/leader/secondclose", "a")
	inside := make(chan struct{})
	release := make(chan struct{})
	var finished atomic.Bool
	l.AddListener(func(isLeader bool) {
		if isLeader {
			_ = l.Close() // from the listener: returns without waiting for itself
			close(inside)
			<-release
			finished.Store(true)
		}
	})
	require.NoError(t, l.Start(testutil.Context(t, 30*time.Second)))
	testutil.WaitClosed(t, inside, 20*time.Second, "the listener's own Close")

	returned := make(chan bool, 1)
	go func() {
		_ = l.Close()
		returned <- finished.Load()
	}()
	// Only a wrong Close can return while the listener is held; give it the chance.
	var sawFinished bool
	select {
	case sawFinished = <-returned:
	case <-time.After(500 * time.Millisecond):
		close(release)
		sawFinished = <-returned
		release = nil
	}
	if release != nil {
		close(release)
	}
	require.True(t, sawFinished, "an outside Close returned while the latch's listener was still running")
	assertNoChildren(t, srv.ConnectString(), "/leader/secondclose", c)
}
