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
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestTermContextCause: a term context says why it ended (ErrLeadershipLost), and on an
// ended term it is cancelled at once.
func TestTermContextCause(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	l := startLatch(t, c, "/leader/cause", "a")
	term := await(t, l, 20*time.Second, "a leads")
	tctx, cancel := term.Context(context.Background())
	defer cancel()
	require.NoError(t, l.Close())
	testutil.WaitClosed(t, tctx.Done(), 10*time.Second, "the term context after Close")
	assert.ErrorIs(t, context.Cause(tctx), leader.ErrLeadershipLost)
	ended, cancel2 := term.Context(context.Background())
	defer cancel2()
	assert.Error(t, ended.Err(), "a context of an ended term is cancelled at once")
	assert.ErrorIs(t, context.Cause(ended), leader.ErrLeadershipLost)
}

// TestSelectorDropsCallersLease: a selector started with a lease context keeps no lease
// value of it: its function contends for that lock like anyone else (ErrLocked while the
// holder holds it), it is not refused as the holder.
func TestSelectorDropsCallersLease(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, srv.ConnectString())
	m, err := mutex.New(c, "/leader/held")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	lctx, cancel := lease.Context(ctx)
	defer cancel()
	got := make(chan error, 1)
	s, err := leader.NewSelector(c, "/leader/sel", "a", func(fctx context.Context) error {
		_, err := m.TryAcquire(fctx)
		got <- err
		select {
		case <-fctx.Done(): // Close ends the leadership
		case <-time.After(30 * time.Second):
		}
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, s.Start(lctx))
	select {
	case err := <-got:
		assert.ErrorIs(t, err, mutex.ErrLocked)
	case <-time.After(20 * time.Second):
		t.Fatal("the selector did not lead")
	}
	require.NoError(t, s.Close())
	require.NoError(t, lease.Release(ctx))
}
