package barrier_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// Remove: "Remove removes the barrier, which releases every waiter." The waiter watches
// the barrier node; Remove deletes it and the waiter's watch fires with NodeDeleted: the
// server told the waiter the barrier is not set. The coordinator then sets the barrier
// again for its next batch before the waiter's look after the event reaches the server
// (held here in the waiter's request hook). A waiter that was told of the removal is
// released by it; it must not go on waiting for a Remove of the next batch.
func TestWaitIsReleasedByRemoveFollowedBySet(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	var (
		mu      sync.Mutex
		gets    int
		held    = make(chan struct{})
		release = make(chan struct{})
	)
	waiter := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op != "getData" {
			return
		}
		mu.Lock()
		gets++
		n := gets
		mu.Unlock()
		if n == 2 { // the look after the watch fired
			close(held)
			<-release
		}
	}))
	coord := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/barriers/remove-then-set"
	b := newBarrier(t, coord, path)
	require.NoError(t, b.Set(ctx))

	done := make(chan error, 1)
	go func() { done <- newBarrier(t, waiter, path).Wait(ctx) }()
	require.Eventually(t, func() bool { return testutil.ZKWatchers(t, waiter, path).Data > 0 },
		20*time.Second, 10*time.Millisecond, "the waiter does not watch the barrier")

	require.NoError(t, b.Remove(ctx)) // releases every waiter
	select {
	case <-held:
	case err := <-done:
		require.NoError(t, err)
		return // released without looking again: nothing more to show
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter did not hear of the removal")
	}
	require.NoError(t, b.Set(ctx)) // the next batch
	close(release)
	select {
	case err := <-done:
		require.NoError(t, err, "the barrier was removed")
	case <-time.After(15 * time.Second):
		t.Fatal("Remove did not release the waiter: it told of the removal (NodeDeleted), yet Wait is still waiting, for the next batch's barrier")
	}
	require.NoError(t, b.Remove(ctx))
}
