package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// A Put under the guard of a lease already released is refused (ErrFenced: "nothing of
// the write was applied"), yet the queue path it needs is created first, outside the
// guard: a write made after the lease ended, applied by the server.
func TestFencedPutCreatesNoQueuePath(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const path = "/fencedput/fenced/queue"
	m, err := mutex.New(c, "/fencedput/fenced-lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	g, err := lease.Guard(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
	t.Cleanup(func() { _ = c.Delete(ctx, "/fencedput/fenced", framework.WithChildren()) })

	q, err := queue.New(c, path, queue.Bytes{})
	require.NoError(t, err)
	_, err = q.Put(framework.WithGuard(ctx, g), []byte("late"))
	require.ErrorIs(t, err, framework.ErrFenced)
	st, err := c.Exists(ctx, path)
	require.NoError(t, err)
	require.Nilf(t, st, "a put refused as fenced (nothing applied) created the queue path %s after the lease ended", path)
}
