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

// Put (and SimpleQueue.Offer) under a lease's guard queue the item while the lock is
// held and queue nothing once it is released (refused by the server, and by the client);
// unguarded, the late put is queued. A guarded put into a queue whose path does not
// exist yet makes the path first.
func TestGuardedPut(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const path, simplePath = "/guard/queue", "/guard/simplequeue"
	q, err := queue.New(c, path, queue.Bytes{})
	require.NoError(t, err)
	sq, err := queue.NewSimple(c, simplePath, queue.Bytes{})
	require.NoError(t, err)
	m, err := mutex.New(c, "/guard/queue-lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	g, err := lease.Guard(ctx)
	require.NoError(t, err)
	held := framework.WithGuard(ctx, g)
	late := framework.WithGuard(ctx, framework.NewGuard(g.Path(), g.Czxid(), nil))

	p1, err := q.Put(held, []byte("held"))
	require.NoError(t, err)
	require.Contains(t, p1, path+"/queue-")
	_, err = sq.Offer(held, []byte("held"))
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))

	_, err = q.Put(late, []byte("late"))
	require.ErrorIs(t, err, framework.ErrFenced, "refused by the server")
	_, err = q.Put(held, []byte("late"))
	require.ErrorIs(t, err, framework.ErrFenced, "refused before sending")
	_, err = sq.Offer(late, []byte("late"))
	require.ErrorIs(t, err, framework.ErrFenced)
	require.Len(t, testutil.Children(t, srv.ConnectString(), path), 1, "a fenced put queued an item")
	require.Len(t, testutil.Children(t, srv.ConnectString(), simplePath), 1, "a fenced offer queued an item")

	// Negative control: unguarded, the late put is queued.
	_, err = q.Put(ctx, []byte("late"))
	require.NoError(t, err)
	require.Len(t, testutil.Children(t, srv.ConnectString(), path), 2)
	for _, p := range []string{path, simplePath} {
		require.NoError(t, c.Delete(ctx, p, framework.WithChildren()))
	}
}
