package semaphore

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestLeaseNodeInInnerLockSession forces a session change right after an acquirer (A)
// took the inner lock. Its inner lock went with the old session, so another acquirer (B)
// takes the inner lock and queues a lease node behind the holder (C). A must not create
// its lease node now (in the new session, unserialised): it must take the inner lock
// again. Otherwise, with max 1, A's and B's lease nodes wait on each other forever once C
// releases.
func TestLeaseNodeInInnerLockSession(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	const path = "/sem/session"
	ca := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	cb := testutil.Connect(t, srv.ConnectString())
	cc := testutil.Connect(t, srv.ConnectString())
	newSem := func(c *framework.Client) *Semaphore {
		s, err := New(c, path, 1)
		require.NoError(t, err)
		return s
	}
	sa, sb, sc := newSem(ca), newSem(cb), newSem(cc)
	ctx := testutil.Context(t, 60*time.Second)

	lc, err := sc.Acquire(ctx)
	require.NoError(t, err)

	type result struct {
		l   *Lease
		err error
	}
	bres := make(chan result, 1)
	var once sync.Once
	testHookInnerLocked = func(s *Semaphore) {
		if s != sa {
			return
		}
		once.Do(func() {
			sid := ca.SessionID()
			gen := ca.Generation()
			proxy.Stall()
			require.Eventually(t, func() bool {
				owners, err := zktest.EphemeralOwners(srv.Addr())
				return err == nil && len(owners[sid]) == 0
			}, 20*time.Second, 50*time.Millisecond, "the server did not expire A's session")
			proxy.Heal()
			require.Eventually(t, func() bool { return ca.Generation() != gen && ca.State().IsConnected() },
				20*time.Second, 50*time.Millisecond, "A got no new session")
			go func() {
				l, err := sb.Acquire(ctx)
				bres <- result{l, err}
			}()
			// B took the inner lock (A's went with its session) and queued its lease node.
			require.Eventually(t, func() bool {
				kids, err := zktest.Children(ctx, srv.ConnectString(), path+"/leases")
				return err == nil && len(kids) == 2
			}, 20*time.Second, 50*time.Millisecond, "B queued no lease node")
		})
	}
	t.Cleanup(func() { testHookInnerLocked = nil })

	ares := make(chan result, 1)
	go func() {
		l, err := sa.Acquire(ctx)
		ares <- result{l, err}
	}()
	// A either created a lease node (3 under leases) or queued for the inner lock again
	// (2 under locks); then C lets go.
	require.Eventually(t, func() bool {
		leases, err1 := zktest.Children(ctx, srv.ConnectString(), path+"/leases")
		inner, err2 := zktest.Children(ctx, srv.ConnectString(), path+"/locks")
		return err1 == nil && err2 == nil && (len(leases) == 3 || len(inner) == 2)
	}, 30*time.Second, 50*time.Millisecond, "A neither queued a lease node nor the inner lock")
	require.NoError(t, lc.Release(ctx))

	var first, second result
	select {
	case first = <-bres:
	case second = <-ares:
		t.Fatal("A got the lease before B, which was queued first")
	case <-time.After(20 * time.Second):
		t.Fatal("B did not get the lease after C released: the lease nodes wait on each other")
	}
	require.NoError(t, first.err)
	require.NoError(t, first.l.Release(ctx))
	select {
	case second = <-ares:
	case <-time.After(20 * time.Second):
		t.Fatal("A did not get the lease after B released")
	}
	require.NoError(t, second.err)
	require.NoError(t, second.l.Release(ctx))
	for _, c := range []*framework.Client{ca, cb, cc} {
		require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	}
	testutil.RequireNoChildren(t, srv.ConnectString(), path+"/leases")
	testutil.RequireNoChildren(t, srv.ConnectString(), path+"/locks")
}
