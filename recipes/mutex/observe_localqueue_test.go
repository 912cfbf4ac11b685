package mutex_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// framework.WithLockObserver: "calls observe when a lock recipe built on the client
// (mutex, ...) acquires, fails to acquire or releases a lock or lease". With the local
// queue (the default), an acquisition that gets the lock handed over by a local holder,
// and a TryAcquire refused because a goroutine of the same Mutex holds it, are
// acquisitions like the others: the observer must hear them (here it hears two releases
// for one acquisition, and no failure).
func TestLockObserverHearsLocalQueueAcquisitions(t *testing.T) {
	srv := zktest.NewServer(t)
	var mu sync.Mutex
	var events []framework.LockEvent
	c := testutil.Connect(t, srv.ConnectString(), framework.WithLockObserver(func(li framework.LockInfo) {
		mu.Lock()
		events = append(events, li.Event)
		mu.Unlock()
	}))
	take := func() []framework.LockEvent {
		mu.Lock()
		defer mu.Unlock()
		got := events
		events = nil
		return got
	}
	ctx := testutil.Context(t, 30*time.Second)
	m := newMutex(t, c, "/obs/localqueue")
	a, err := m.Acquire(ctx)
	require.NoError(t, err)
	_, err = m.TryAcquire(ctx)
	require.ErrorIs(t, err, mutex.ErrLocked)
	assert.Equal(t, []framework.LockEvent{framework.LockAcquired, framework.LockFailed}, take(),
		"a TryAcquire refused while another goroutine of the Mutex holds it")

	next := goAcquire(ctx, m)
	require.Eventually(t, func() bool { return m.LocalWaiters() == 1 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, a.Release(ctx))
	b := <-next
	require.NoError(t, b.err)
	require.Equal(t, a.Node(), b.l.Node(), "handed over locally")
	require.NoError(t, b.l.Release(ctx))
	assert.Equal(t, []framework.LockEvent{framework.LockReleased, framework.LockAcquired, framework.LockReleased}, take(),
		"a lock handed over to a local waiter")
}
