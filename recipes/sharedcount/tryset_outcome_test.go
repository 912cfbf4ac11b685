package sharedcount_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

// A resent setData's NoNode is not "not applied". TrySet's setData is applied by the
// server (a watcher on another client sees the value), its reply is lost with the
// connection, another participant then deletes the count node, and the client sends the
// setData again after reconnecting: NoNode. The first attempt was applied, so TrySet must
// not report ErrConflict ("nothing was written"); the outcome is at best unknown.
func TestTrySetAppliedThenDeletedIsNotAConflict(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c1 := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/fleet/outcome-applied-then-deleted"

	a := start(t, c1, path, 5)
	prev, err := a.Get()
	require.NoError(t, err)

	proxy.HoldReplies()
	done := testutil.Go(ctx, func(ctx context.Context) error { return a.TrySet(ctx, prev, 6) })
	require.Eventually(t, func() bool {
		data, _, err := other.GetData(ctx, path)
		return err == nil && string(data) == string(sharedcount.Encode(6))
	}, 20*time.Second, 10*time.Millisecond, "TrySet's setData was not applied")
	// Applied: 5 -> 6 on the node read. Another participant deletes the node.
	require.NoError(t, other.Delete(ctx, path, framework.WithVersion(-1)))
	proxy.DropConnections() // the reply is lost; the client sends the setData again
	proxy.Heal()
	err = testutil.Result(t, done, 30*time.Second, "TrySet")
	require.Error(t, err)
	require.Falsef(t, isConflictOnly(err),
		"TrySet reported a conflict, nothing written (%v), but the server applied its write (5 -> 6) before the node was deleted", err)
	require.ErrorIs(t, err, sharedcount.ErrUnknownOutcome)
}

func isConflictOnly(err error) bool {
	return errors.Is(err, sharedcount.ErrConflict) && !errors.Is(err, sharedcount.ErrUnknownOutcome)
}

// Starting twice is an error, but not ErrClosed: the value is open. Two Starts at once
// (the first held before its create goes out, the second done meanwhile): the first then
// finds the value started and returns ErrClosed, which says the value was closed.
func TestSecondStartIsNotErrClosed(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	var (
		mu      sync.Mutex
		armed   = true
		held    = make(chan struct{})
		release = make(chan struct{})
	)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op != "create" {
			return
		}
		mu.Lock()
		hold := armed
		armed = false
		mu.Unlock()
		if hold {
			close(held)
			<-release
		}
	}))
	ctx := testutil.Context(t, 60*time.Second)
	sc, err := sharedcount.New(c, "/fleet/outcome-double-start", 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sc.Close() })
	first := testutil.Go(ctx, sc.Start)
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the first Start sent no create")
	}
	require.NoError(t, sc.Start(ctx), "the second Start, while the first one waits")
	close(release)
	err = testutil.Result(t, first, 20*time.Second, "the first Start")
	require.Error(t, err, "starting twice is an error")
	require.NotErrorIs(t, err, sharedcount.ErrClosed, "the value is not closed: starting twice is not ErrClosed")
	_, err = sc.Get()
	require.NoError(t, err, "the value is open")
}

// Two values on one client (one session) and one path: closing one leaves the other
// current (its watch is its own), and a TrySet from a value whose cache is behind the
// other's write is a conflict.
func TestTwoValuesOnOneClientAreIndependent(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/fleet/outcome-two-values"
	a := start(t, c, path, 1)
	b := start(t, c, path, 1)
	pa, err := a.Get()
	require.NoError(t, err)
	pb, err := b.Get()
	require.NoError(t, err)
	require.NoError(t, a.TrySet(ctx, pa, 2))
	err = b.TrySet(ctx, pb, 3)
	if err == nil {
		data, _, _ := other.GetData(ctx, path)
		t.Fatalf("both TrySets from version %d succeeded; the node holds % x", pb.Version, data)
	}
	require.ErrorIs(t, err, sharedcount.ErrConflict)
	require.NoError(t, a.Close())
	_, err = other.SetData(ctx, path, sharedcount.Encode(9), -1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, err := b.Get()
		return err == nil && v.Value == 9
	}, 10*time.Second, 10*time.Millisecond, "b no longer hears changes after a's Close")
}
