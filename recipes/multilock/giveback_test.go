package multilock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestFailedGiveBackReleasesEveryLock: NewFromPaths(a, b, c) tries all three at once, gets
// a and c, finds b taken, and gives c back to wait in path order; c's node was deleted by
// someone else meanwhile (right after the try's listing showed it), so giving c back fails
// with ErrLeaseLost. The acquisition fails with that error, and releases a too: no lock is
// left held by no lease.
func TestFailedGiveBackReleasesEveryLock(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	const a, b, c = "/ml/giveback/a", "/ml/giveback/b", "/ml/giveback/c"
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	var once sync.Once
	deleted := make(chan error, 1)
	client := testutil.Connect(t, srv.ConnectString(), framework.WithRequestObserver(func(r framework.RequestInfo) {
		if r.Op != "getChildren" || r.Path != c || r.Err != nil {
			return
		}
		// The try's listing showed its node at c: someone else deletes it now, before the
		// try returns.
		once.Do(func() {
			kids, _, err := other.Children(ctx, c)
			for _, k := range kids {
				err = other.Delete(ctx, framework.JoinPath(c, k))
			}
			deleted <- err
		})
	}))
	mb, err := mutex.New(other, b)
	require.NoError(t, err)
	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)
	ml, err := multilock.NewFromPaths(client, a, b, c)
	require.NoError(t, err)

	_, err = ml.Acquire(ctx)
	require.ErrorIs(t, err, mutex.ErrLeaseLost, "giving back c, deleted by someone else, did not fail")
	require.NoError(t, <-deleted)
	require.NoError(t, client.WaitGuaranteedDeletes(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), a)
	testutil.RequireNoChildren(t, srv.ConnectString(), c)
	require.NoError(t, lb.Release(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), b)
}
