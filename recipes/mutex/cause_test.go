package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestLeaseContextCause: a lease context says why it ended (ErrReleased, ErrLeaseLost),
// and on an ended lease it is cancelled at once.
func TestLeaseContextCause(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, srv.ConnectString())
	m := newMutex(t, c, "/locks/cause")

	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	lctx, cancel := l.Context(ctx)
	defer cancel()
	require.NoError(t, l.Release(ctx))
	testutil.WaitClosed(t, lctx.Done(), 10*time.Second, "the lease context after release")
	assert.ErrorIs(t, context.Cause(lctx), mutex.ErrReleased)

	ended, cancel2 := l.Context(ctx)
	defer cancel2()
	assert.Error(t, ended.Err(), "a context of an ended lease is cancelled at once")
	assert.ErrorIs(t, context.Cause(ended), mutex.ErrReleased)

	l2, err := m.Acquire(ctx)
	require.NoError(t, err)
	lctx2, cancel3 := l2.Context(ctx)
	defer cancel3()
	require.NoError(t, c.Close()) // the lease may be lost with its client
	testutil.WaitClosed(t, lctx2.Done(), 10*time.Second, "the lease context after its client closed")
	assert.ErrorIs(t, context.Cause(lctx2), mutex.ErrLeaseLost)
	assert.ErrorIs(t, l2.Release(ctx), mutex.ErrLeaseLost)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/cause")
}

// TestLeaseReleasedThenClientClosedSaysReleased: a lease released cleanly says
// ErrReleased even when its client closes right after, before the lease's watcher ran
// (the common `defer c.Close()` after `defer lease.Release(...)`). The watcher saw both
// ends ready and used to take the loss first.
func TestLeaseReleasedThenClientClosedSaysReleased(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	for i := 0; i < 20; i++ {
		c := testutil.Connect(t, srv.ConnectString())
		m := newMutex(t, c, "/locks/cause-close")
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		lctx, cancel := l.Context(ctx)
		require.NoError(t, l.Release(ctx))
		require.NoError(t, c.Close())
		testutil.WaitClosed(t, lctx.Done(), 10*time.Second, "the lease context")
		require.ErrorIs(t, context.Cause(lctx), mutex.ErrReleased, "round %d", i)
		cancel()
	}
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/cause-close")
}
