package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestReentryAndDowngradeThroughTheLease: a context carrying a live lease lets nobody in
// (ErrAlreadyHeld); re-entry and downgrade go through the lease.
func TestReentryAndDowngradeThroughTheLease(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	rw := newRW(t, testutil.Connect(t, srv.ConnectString()), "/rw/lease")
	w, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	wctx, cancel := w.Context(ctx)
	defer cancel()
	_, err = rw.WriteLock().TryAcquire(wctx)
	assert.ErrorIs(t, err, rwlock.ErrAlreadyHeld)
	dctx, dcancel := context.WithTimeout(wctx, 200*time.Millisecond)
	_, err = rw.ReadLock().Acquire(dctx)
	dcancel()
	assert.ErrorIs(t, err, rwlock.ErrAlreadyHeld, "a read through the write lease's context is no downgrade")

	w2, err := w.Reenter()
	require.NoError(t, err)
	r, err := w.Downgrade(ctx)
	require.NoError(t, err)
	assert.False(t, r.IsWrite())
	require.NoError(t, w.Release(ctx))
	require.NoError(t, w2.Release(ctx))
	testutil.WaitClosed(t, w2.Done(), 10*time.Second, "the write lease after its last release")
	all, err := rw.Participants(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{r.Node()}, all)
	require.NoError(t, r.Release(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), "/rw/lease")
}
