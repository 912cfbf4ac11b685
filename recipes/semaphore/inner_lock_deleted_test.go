package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// waitKids waits until path has n children (seen by watcher, with watches: no sleeping).
func waitKids(t *testing.T, ctx context.Context, watcher *framework.Client, path string, n int) []string {
	t.Helper()
	for {
		kids, _, w, err := watcher.ChildrenW(ctx, path)
		if err == nil && len(kids) == n {
			return kids
		}
		select {
		case <-w.Done():
		case <-ctx.Done():
			t.Fatalf("%s never had %d children (last: %v, %v)", path, n, kids, err)
		}
	}
}

// Package doc: an acquirer "waits (still holding the inner mutex, so one acquirer waits at
// a time) for a child to go". When the waiter's inner-lock node is deleted behind it (an
// operator, another client), a second acquirer takes the inner lock and queues a second
// lease node: once the holder releases, a lease is free, the two waiters' nodes make the
// count exceed the maximum, and neither ever gets it.
func TestSemaphoreWaiterInnerLockDeletedStillGrantsFreeLease(t *testing.T) {
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/sem/innerdeleted"
	newSem := func() *semaphore.Semaphore {
		s, err := semaphore.New(testutil.Connect(t, srv.ConnectString()), path, 1)
		require.NoError(t, err)
		return s
	}
	h, a, b := newSem(), newSem(), newSem()
	admin := testutil.Connect(t, srv.ConnectString())
	held, err := h.Acquire(ctx)
	require.NoError(t, err)

	type res struct {
		l   *semaphore.Lease
		err error
	}
	got := make(chan res, 2)
	acq := func(s *semaphore.Semaphore) {
		go func() {
			l, err := s.Acquire(ctx)
			got <- res{l, err}
		}()
	}
	acq(a)
	waitKids(t, ctx, admin, path+"/leases", 2)
	inner := waitKids(t, ctx, admin, path+"/locks", 1)
	// Someone deletes A's inner-lock node while A waits for room.
	require.NoError(t, admin.Delete(ctx, path+"/locks/"+inner[0]))
	acq(b)
	waitKids(t, ctx, admin, path+"/leases", 3)

	require.NoError(t, held.Release(ctx))
	select {
	case r := <-got:
		require.NoError(t, r.err)
		require.NoError(t, r.l.Release(ctx))
	case <-time.After(15 * time.Second):
		leases, _, _ := admin.Children(ctx, path+"/leases")
		t.Fatalf("the holder released its lease, the semaphore (max 1) has no holder, and neither waiter got it in 15 s: leases %v", leases)
	}
}
