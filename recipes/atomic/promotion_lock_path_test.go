package atomic_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// A counter whose promotion lock lives below its node (WithPromotedToLock("/c/lock")) is
// still "one persistent node at the path given" (the package doc), which "outlives
// sessions". Here another participant holds the promotion lock (a promoted change under
// way) while the counter node does not exist yet: the lock's container parents make the
// counter's path a container. An increment then succeeds into that container (Succeeded,
// Post 1), and once the lock is released the server reaps the container, and the counter
// with it: the next Get reads 0, a change nobody made. Either New refuses a lock path at
// or below the counter's, or the counter node must be a persistent node.
func TestLongPromotionLockBelowCounterKeepsCounter(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path, lockPath = "/counters/c", "/counters/c/lock"
	l, err := atomic.NewLong(c, path, atomic.WithPromotedToLock(lockPath, nil, 0))
	if errors.Is(err, framework.ErrInvalidArgument) {
		return // a lock path at or below the counter's refused at construction: fine
	}
	require.NoError(t, err)

	// Another participant's promoted change holds the lock (the same mutex the promotion uses).
	m, err := mutex.New(other, lockPath)
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)

	r, err := l.Increment(ctx)
	require.NoError(t, err)
	require.True(t, r.Succeeded)
	require.EqualValues(t, 1, r.Post)
	require.NoError(t, lease.Release(ctx))

	// The lock's container (it had a child) is reaped by the server (every second here).
	require.Eventually(t, func() bool {
		st, err := other.Exists(ctx, lockPath)
		return err == nil && st == nil
	}, 20*time.Second, 50*time.Millisecond, "the lock's container is reaped once the lock was released")
	// A persistent counter node stays; a container one goes at the reaper's next passes.
	// (ZooKeeper's Stat does not tell a container: ephemeralOwner reads 0.)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st, err := other.Exists(ctx, path)
		require.NoError(t, err)
		if st == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	got, err := l.Get(ctx)
	require.NoError(t, err)
	require.EqualValuesf(t, 1, got.Post,
		"the counter %s was made a container by its promotion lock's parents (%s) and reaped once the lock was released: an increment to 1 that nobody undid reads %d",
		path, lockPath, got.Post)
	require.NoError(t, other.Delete(ctx, "/counters", framework.WithChildren(), framework.Quietly()))
}

// Every constructor refuses a promotion lock at the counter's path or below it, and takes
// one beside it, also when its name starts with the counter's.
func TestNewRefusesPromotionLockAtOrBelowCounter(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	defer c.Close()
	newLong := func(p string, o ...atomic.Option) error { _, err := atomic.NewLong(c, p, o...); return err }
	newInt := func(p string, o ...atomic.Option) error { _, err := atomic.NewInt(c, p, o...); return err }
	newValue := func(p string, o ...atomic.Option) error { _, err := atomic.NewValue(c, p, o...); return err }
	for name, mk := range map[string]func(string, ...atomic.Option) error{"NewLong": newLong, "NewInt": newInt, "NewValue": newValue} {
		for _, lock := range []string{"/counters/c", "/counters/c/lock", "/counters/c/a/b"} {
			err := mk("/counters/c", atomic.WithPromotedToLock(lock, nil, 0))
			require.ErrorIsf(t, err, framework.ErrInvalidArgument, "%s with lock %s", name, lock)
		}
		for _, lock := range []string{"/counters/c-lock", "/counters/lock", "/locks/counters/c"} {
			require.NoErrorf(t, mk("/counters/c", atomic.WithPromotedToLock(lock, nil, 0)), "%s with lock %s", name, lock)
		}
	}
}
