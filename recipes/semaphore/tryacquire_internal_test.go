package semaphore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// holdInnerReleases makes every granted lease's inner-lock delete wait until the returned
// func is called (or, should nothing call it, 3 s: a try that waits for that delete then
// still gets its answer).
func holdInnerReleases(t *testing.T) (let func()) {
	t.Helper()
	gate := make(chan struct{})
	hook := func(*Semaphore) {
		select {
		case <-gate:
		case <-time.After(3 * time.Second):
		}
	}
	testHookReleaseInner.Store(&hook)
	t.Cleanup(func() { testHookReleaseInner.Store(nil) })
	var closed bool
	return func() {
		if !closed {
			closed = true
			close(gate)
		}
	}
}

// TestTryAcquireRightAfterAcquire: with two of three leases free, a TryAcquire right after
// an Acquire returned gets a lease, although the Acquire's inner lock is still being
// deleted (held here until the TryAcquire returned): that inner lock is no other
// contender's.
func TestTryAcquireRightAfterAcquire(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	s, err := New(c, "/sem/tryafter", 3)
	require.NoError(t, err)
	let := holdInnerReleases(t)
	defer let()

	first, err := s.Acquire(ctx)
	require.NoError(t, err)
	second, err := s.TryAcquire(ctx)
	let()
	require.NoError(t, err, "TryAcquire found no lease free with two of three free")
	require.NoError(t, ReturnAll(ctx, first, second))
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), "/sem/tryafter/leases")
	testutil.RequireNoChildren(t, srv.ConnectString(), "/sem/tryafter/locks")
}

// TestTryAcquireNOnFreeSemaphore: TryAcquireN(2) on a free three-lease semaphore gets both
// leases, although the first lease's inner lock is still being deleted (held here until
// TryAcquireN returned) when it tries for the second.
func TestTryAcquireNOnFreeSemaphore(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	s, err := New(c, "/sem/tryn", 3)
	require.NoError(t, err)
	let := holdInnerReleases(t)
	defer let()

	got, err := s.TryAcquireN(ctx, 2)
	let()
	require.NoError(t, err, "TryAcquireN(2) found no two leases free on a free semaphore of three")
	require.Len(t, got, 2)
	require.NoError(t, ReturnAll(ctx, got...))
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), "/sem/tryn/leases")
	testutil.RequireNoChildren(t, srv.ConnectString(), "/sem/tryn/locks")
}
