package atomic_test

import (
	"context"
	"sync"
	stdatomic "sync/atomic"
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

// The first guarded create of a counter whose parent is missing: the guarded multi fails
// on the missing parent (the guard held), the lease is released right then, and the
// parent is created outside the guard before the retried multi is refused. The call
// reports ErrFenced ("nothing of the write was applied"), yet the server applied a create
// made after the lease ended.
func TestFencedCreateMakesNoParentAfterLeaseEnded(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 30*time.Second)
	lc := testutil.Connect(t, srv.ConnectString())
	m, err := mutex.New(lc, "/fencedcreate/atomic-lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	g, err := lease.Guard(ctx)
	require.NoError(t, err)

	var armed stdatomic.Bool
	var once sync.Once
	c := testutil.Connect(t, srv.ConnectString(), framework.WithRequestObserver(func(ri framework.RequestInfo) {
		if ri.Op == "multi" && ri.Err != nil && armed.Load() {
			// The guarded create found no parent: the lease ends now.
			once.Do(func() { require.NoError(t, lease.Release(context.Background())) })
		}
	}))
	const parent = "/fencedcreate/atomic/parent"
	n, err := atomic.NewLong(c, parent+"/counter")
	require.NoError(t, err)
	armed.Store(true)
	_, err = n.Increment(framework.WithGuard(ctx, g))
	require.ErrorIs(t, err, framework.ErrFenced)
	st, err := c.Exists(ctx, parent)
	require.NoError(t, err)
	require.Nilf(t, st, "a create refused as fenced (nothing applied) made %s after the lease ended", parent)
}
