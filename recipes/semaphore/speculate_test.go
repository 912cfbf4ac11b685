package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestFullSemaphoreWaitsHoldingInnerLock: an acquirer whose last acquisition found room
// lets go of the inner lock as it creates its lease node; when the semaphore turns out to
// be full, it must not wait so (two such waiters on one lease would wait on each other):
// it takes the inner lock again and waits holding it, one lease node beside the holder's,
// and gets the lease when the holder releases.
func TestFullSemaphoreWaitsHoldingInnerLock(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/sem/speculate"
	a, err := semaphore.New(testutil.Connect(t, srv.ConnectString()), path, 1)
	require.NoError(t, err)
	h, err := semaphore.New(testutil.Connect(t, srv.ConnectString()), path, 1)
	require.NoError(t, err)
	// A's first acquisition finds room: its next one lets go of the inner lock early.
	l, err := a.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	held, err := h.Acquire(ctx)
	require.NoError(t, err)

	got := make(chan error, 1)
	var al *semaphore.Lease
	go func() {
		var err error
		al, err = a.Acquire(ctx)
		got <- err
	}()
	// A waits holding the inner lock: one inner lock node, and its lease node beside the
	// holder's.
	watcher := testutil.Connect(t, srv.ConnectString())
	for {
		locks, _, wl, err := watcher.ChildrenW(ctx, path+"/locks")
		require.NoError(t, err)
		leases, _, wk, err := watcher.ChildrenW(ctx, path+"/leases")
		require.NoError(t, err)
		if len(locks) == 1 && len(leases) == 2 {
			break
		}
		select {
		case err := <-got:
			t.Fatalf("A returned while the semaphore was full: %v", err)
		case <-wl.Done():
		case <-wk.Done():
		case <-ctx.Done():
			t.Fatalf("A never waited holding the inner lock: %d inner lock nodes, %d lease nodes", len(locks), len(leases))
		}
	}
	require.NoError(t, held.Release(ctx))
	require.NoError(t, testutil.Result(t, got, 30*time.Second, "A's acquire"))
	require.NoError(t, al.Release(context.WithoutCancel(ctx)))
	requireEmpty(t, srv.ConnectString(), path)
}
