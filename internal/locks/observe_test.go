package locks_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestLockObserver checks that a client's lock observer hears each acquisition (with
// its wait), each failed one (with its error) and each last release (with the hold time)
// of a mutex, a read-write lock and a semaphore, under the recipe's own path, and not
// the semaphore's inner lock.
func TestLockObserver(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	var (
		mu     sync.Mutex
		events []framework.LockInfo
	)
	c := testutil.Connect(t, srv.ConnectString(), framework.WithLockObserver(func(li framework.LockInfo) {
		mu.Lock()
		events = append(events, li)
		mu.Unlock()
	}))
	other := testutil.Connect(t, srv.ConnectString())
	take := func() []framework.LockInfo {
		mu.Lock()
		defer mu.Unlock()
		got := events
		events = nil
		return got
	}
	type ev struct {
		event  framework.LockEvent
		recipe string
		path   string
	}
	strip := func(got []framework.LockInfo) []ev {
		var out []ev
		for _, g := range got {
			out = append(out, ev{g.Event, g.Recipe, g.Path})
			assert.GreaterOrEqual(t, g.Duration, time.Duration(0))
			assert.Equal(t, g.Event == framework.LockFailed, g.Err != nil, "%+v", g)
		}
		return out
	}

	m, err := mutex.New(c, "/obs/mutex")
	require.NoError(t, err)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	// Busy: another client holds it; our TryAcquire fails.
	m2, err := mutex.New(other, "/obs/mutex")
	require.NoError(t, err)
	l2, err := m2.Acquire(ctx)
	require.NoError(t, err)
	_, err = m.TryAcquire(ctx)
	require.ErrorIs(t, err, mutex.ErrLocked)
	require.NoError(t, l2.Release(ctx))
	assert.Equal(t, []ev{
		{framework.LockAcquired, "mutex", "/obs/mutex"},
		{framework.LockReleased, "mutex", "/obs/mutex"},
		{framework.LockFailed, "mutex", "/obs/mutex"},
	}, strip(take()))

	rw, err := rwlock.New(c, "/obs/rw")
	require.NoError(t, err)
	wl, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, wl.Release(ctx))
	rl, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, rl.Release(ctx))
	assert.Equal(t, []ev{
		{framework.LockAcquired, "rwlock-write", "/obs/rw"},
		{framework.LockReleased, "rwlock-write", "/obs/rw"},
		{framework.LockAcquired, "rwlock-read", "/obs/rw"},
		{framework.LockReleased, "rwlock-read", "/obs/rw"},
	}, strip(take()))

	s, err := semaphore.New(c, "/obs/sem", 1)
	require.NoError(t, err)
	sl, err := s.Acquire(ctx)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrNoLeases)
	require.NoError(t, sl.Release(ctx))
	assert.Equal(t, []ev{
		{framework.LockAcquired, "semaphore", "/obs/sem"},
		{framework.LockFailed, "semaphore", "/obs/sem"},
		{framework.LockReleased, "semaphore", "/obs/sem"},
	}, strip(take()))

	_, err = framework.New(srv.ConnectString(), framework.WithLockObserver(nil))
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
}
