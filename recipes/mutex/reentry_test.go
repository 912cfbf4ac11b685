package mutex_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestContextDoesNotLetWorkersIn: a holder hands its lease context to four worker
// goroutines (errgroup style). None of them may get into the critical section while the
// holder holds the lock: a context travels to every goroutine, it is not the holder's
// identity.
func TestContextDoesNotLetWorkersIn(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	m := newMutex(t, testutil.Connect(t, srv.ConnectString()), "/locks/workers")
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	lctx, cancel := lease.Context(ctx)
	defer cancel()
	var inside atomic.Int32
	gctx := lctx
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Go(func() {
			errs <- func() error {
				if i%2 == 0 {
					l, err := m.TryAcquire(gctx)
					if err == nil {
						inside.Add(1)
						return l.Release(ctx)
					}
					if !errors.Is(err, mutex.ErrAlreadyHeld) {
						return err
					}
					return nil
				}
				dctx, dcancel := context.WithTimeout(gctx, 300*time.Millisecond)
				defer dcancel()
				l, err := m.Acquire(dctx)
				if err == nil {
					inside.Add(1)
					return l.Release(ctx)
				}
				if !errors.Is(err, mutex.ErrAlreadyHeld) && !errors.Is(err, context.DeadlineExceeded) {
					return err
				}
				return nil
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Zero(t, inside.Load(), "workers inside the critical section while the holder holds it")
	require.NoError(t, lease.Release(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/workers")
}

// TestReenterThroughTheLease: re-entry goes through the lease: each counted lease is
// released once and the node goes with the last release. A context carrying an ended
// lease is ignored.
func TestReenterThroughTheLease(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, srv.ConnectString())
	m := newMutex(t, c, "/locks/reenter")
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	lctx, cancel := lease.Context(ctx)
	defer cancel()
	before := c.Requests()
	again, err := lease.Reenter()
	require.NoError(t, err)
	assert.Equal(t, before, c.Requests(), "re-entry costs no round trip")
	assert.Equal(t, lease.Node(), again.Node())

	require.NoError(t, lease.Release(ctx))
	assert.ErrorIs(t, lease.Release(ctx), mutex.ErrNotHeld, "each counted lease is released once")
	st, err := c.Exists(ctx, again.Node())
	require.NoError(t, err)
	assert.NotNil(t, st, "the node stays until the last release")
	_, err = m.TryAcquire(lctx)
	assert.ErrorIs(t, err, mutex.ErrAlreadyHeld, "the lease is still held through the re-entered one")
	require.NoError(t, again.Release(ctx))
	testutil.WaitClosed(t, again.Done(), 10*time.Second, "Done after the last release")
	_, err = lease.Reenter()
	assert.ErrorIs(t, err, mutex.ErrNotHeld)

	// A context carrying an ended lease is ignored.
	testutil.WaitClosed(t, lctx.Done(), 10*time.Second, "the lease context after the last release")
	next, err := m.Acquire(context.WithoutCancel(lctx))
	require.NoError(t, err)
	require.NoError(t, next.Release(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/reenter")
}
