package cache_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// readGate holds the next getData of a client (its request hook) until it is released.
type readGate struct {
	armed    atomic.Bool
	held     chan struct{} // closed when a read is held
	released chan struct{}
}

func newReadGate() *readGate {
	return &readGate{held: make(chan struct{}), released: make(chan struct{})}
}

func (g *readGate) hook(op string) {
	if op != "getData" || !g.armed.CompareAndSwap(true, false) {
		return
	}
	close(g.held)
	select {
	case <-g.released:
	case <-time.After(30 * time.Second): // never hang a test that failed before releasing
	}
}

// A parent deleted and made again with a child of the same name, read by the cache child
// first (the child's read sees the new child while the cache still holds the old parent):
// the cache reports the old child and the old parent removed, then the new parent and the
// new child added, once each, and never files the new child under the old parent.
func TestTreeCacheParentReplacedWithChild(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	other := newClient(t, srv.ConnectString())
	gate := newReadGate()
	c := newClient(t, srv.ConnectString(), framework.WithRequestHook(gate.hook))
	ctx := testutil.Context(t, 60*time.Second)
	const root = "/rp"
	create(t, other, root+"/a/x", "x")
	t.Cleanup(func() { _ = other.Delete(ctx, root, framework.WithChildren(), framework.Quietly()) })

	tc, err := cache.NewTreeCache(c, root)
	require.NoError(t, err)
	r := listen(t, newRecorder(root, true), tc.AddListener)
	require.NoError(t, tc.Start(ctx))
	t.Cleanup(func() { _ = tc.Close() })
	r.expect(t, "NODE_ADDED /rp", "NODE_ADDED /rp/a", "NODE_ADDED /rp/a/x", "INITIALIZED")

	// The child's data changes: the cache reads it again, and that read is held until the
	// parent and the child were replaced.
	gate.armed.Store(true)
	set(t, other, root+"/a/x", "x1")
	testutil.WaitClosed(t, gate.held, 20*time.Second, "the cache's read of the child")
	_, err = other.Transaction(ctx,
		framework.DeleteOp(root+"/a/x", -1),
		framework.DeleteOp(root+"/a", -1),
		framework.CreateOp(root+"/a", []byte("a2"), framework.Persistent, nil),
		framework.CreateOp(root+"/a/x", []byte("x2"), framework.Persistent, nil))
	require.NoError(t, err)
	close(gate.released)

	r.expect(t, "NODE_REMOVED /rp/a/x", "NODE_REMOVED /rp/a", "NODE_ADDED /rp/a", "NODE_ADDED /rp/a/x")
	requireConverges(t, other, root, 1<<30, tc.Snapshot)
	r.checkConsistent(t)
	r.noMore(t)
}
