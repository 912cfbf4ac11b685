package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// A revocable Mutex on the hint path: a revocation written right after the acquisition is
// heard; a foreign delete then ends the lease lost; no watch is left after the release.
func TestPipelinedRevocableHearsRevocationAndForeignDelete(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/pipelined/revoke"
	heard := make(chan struct{}, 4)
	m := newMutex(t, c, path, mutex.WithRevocationListener(func(*mutex.Lease) { heard <- struct{}{} }))
	warmPipe(t, c, m)
	ctx := testutil.Context(t, 60*time.Second)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, mutex.Revoke(ctx, admin, l.Node()))
	select {
	case <-heard:
	case <-time.After(10 * time.Second):
		t.Fatal("the revocation was not heard")
	}
	require.NoError(t, admin.Delete(ctx, l.Node()))
	testutil.WaitClosed(t, l.Done(), 10*time.Second, "Done after the node was deleted")
	require.ErrorIs(t, l.Release(ctx), mutex.ErrLeaseLost)
	require.Eventually(t, func() bool { return c.Watches() == 0 }, 10*time.Second, 10*time.Millisecond, "watches left: %d", c.Watches())
}
