package mutex_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A lease held until its release, whose release's delete was applied but whose reply was
// lost with the connection (the session lives on; the resent delete finds no node, which
// its first attempt explains), was released, not lost: the connection went after the
// release began. Release must not report ErrLeaseLost (the lease's own Done cause says
// ErrReleased: a loss that comes after the release does not change what happened).
func TestReleaseWhoseDeleteReplyWasLostIsNotLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed atomic.Bool
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "delete" && armed.CompareAndSwap(true, false) {
				proxy.HoldReplies() // the delete goes out and is applied; its reply is held
			}
		}))
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	m := newMutex(t, c, "/releaselost/release")
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	gen := c.Generation()
	select {
	case <-l.Done():
		t.Fatal("the lease ended before its release")
	default:
	}
	node := l.Node()
	armed.Store(true)
	res := make(chan error, 1)
	go func() { res <- l.Release(ctx) }()
	// The delete was applied (the node is gone, as the server sees it): now the reply is
	// lost with the connection.
	require.Eventually(t, func() bool {
		st, err := admin.Exists(ctx, node)
		return err == nil && st == nil
	}, 30*time.Second, 10*time.Millisecond, "the release's delete was not applied")
	proxy.DropConnections()
	proxy.Heal()
	select {
	case err = <-res:
	case <-ctx.Done():
		t.Fatal("Release did not return")
	}
	require.Equal(t, gen, c.Generation(), "the same session throughout")
	require.NoError(t, err, "a release that was ours and applied, of a lease held until then, is reported lost")
	testutil.RequireNoChildren(t, srv.ConnectString(), "/releaselost/release")
}

// The lease's node was deleted by someone else while held (another process then took the
// lock), and the release's delete got "no node" from the server — an answer lost with the
// connection; the resent delete gets "no node" again. Neither attempt deleted anything:
// the lease was not this holder's to release, and REFERENCE says a resent delete's "no
// node" is not a success (resolve it, or report it as unknown). Release must not report
// a clean release (nil).
func TestResentDeleteNoNodeAfterForeignDeleteIsNotARelease(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithErrorPolicy(framework.SessionErrorPolicy))
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	m := newMutex(t, c, "/releaselost/resent")
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	gen := c.Generation()
	require.NoError(t, admin.Delete(ctx, l.Node())) // someone else deletes the holder's node
	other, err := newMutex(t, admin, "/releaselost/resent").Acquire(ctx)
	require.NoError(t, err) // and another process takes the lock meanwhile
	require.NoError(t, other.Release(ctx))
	proxy.HoldReplies()
	before := proxy.Forwarded()
	res := make(chan error, 1)
	go func() { res <- l.Release(ctx) }()
	// The release's delete reached the server, which found no node; its answer is lost
	// with the connection. A lease whose watch saw its node deleted before the release
	// sends no delete at all (nothing at the path is its own): it returns at once.
	returned := false
	require.Eventually(t, func() bool {
		select {
		case err = <-res:
			returned = true
			return true
		default:
		}
		return proxy.Forwarded() > before
	}, 30*time.Second, time.Millisecond, "the release's delete never reached the server, and the release did not return")
	proxy.DropConnections()
	proxy.Heal()
	if !returned {
		select {
		case err = <-res:
		case <-ctx.Done():
			t.Fatal("Release did not return")
		}
	}
	require.Equal(t, gen, c.Generation(), "the same session throughout")
	require.Error(t, err, "a release that deleted nothing, of a node someone else deleted (and another then held the lock), is reported released")
	testutil.RequireNoChildren(t, srv.ConnectString(), "/releaselost/resent")
}
