package mutex_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

func setGuarded(ctx context.Context, c *framework.Client, g framework.Guard, path, data string) error {
	_, err := c.GuardedTransaction(ctx, g, framework.SetDataOp(path, []byte(data), -1))
	return err
}

func requireData(t *testing.T, c *framework.Client, path, want string) {
	t.Helper()
	data, _, err := c.GetData(testutil.Context(t, 10*time.Second), path)
	require.NoError(t, err)
	require.Equal(t, want, string(data))
}

// A write under the lease's guard passes while the lock is held and is refused once it
// is released: by the client (the lease ended) and by the server (the node is gone: a
// guard on the same node without the client's check). Without a guard it is applied.
func TestGuardRefusedAfterRelease(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const path, target = "/guard/mutex", "/guard/mutex-value"
	_, err := c.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	m := newMutex(t, c, path)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	g, err := lease.Guard(ctx)
	require.NoError(t, err)
	require.Equal(t, lease.Node(), g.Path())
	tok, err := lease.Token(ctx)
	require.NoError(t, err)
	require.Equal(t, tok>>8, g.Czxid(), "the guard's czxid is the token's")
	serverOnly := framework.NewGuard(g.Path(), g.Czxid(), nil)

	require.NoError(t, setGuarded(ctx, c, g, target, "held"))
	require.NoError(t, setGuarded(ctx, c, serverOnly, target, "held2"))
	require.NoError(t, lease.Release(ctx))

	before := c.Requests()
	require.ErrorIs(t, setGuarded(ctx, c, g, target, "late"), framework.ErrFenced)
	require.Equal(t, before, c.Requests(), "refused before sending")
	err = setGuarded(ctx, c, serverOnly, target, "late")
	require.ErrorIs(t, err, framework.ErrFenced, "the server must refuse: the lock node is gone")
	requireData(t, c, target, "held2")
	_, err = lease.Guard(ctx)
	require.ErrorIs(t, err, mutex.ErrLeaseLost)

	// Negative control: the same late write without a guard is applied.
	_, err = c.SetData(ctx, target, []byte("late"), -1)
	require.NoError(t, err)
	requireData(t, c, target, "late")
	assertNoChildren(t, srv.ConnectString(), path, c)
}

// A holder whose session expired (cut off by the proxy) while another process took the
// lock and wrote: its guarded write, sent after it reconnects, is refused by the server;
// the same write unguarded overwrites the new holder's value (negative control).
func TestGuardRefusedAfterSessionExpired(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path, target = "/guard/expire", "/guard/expire-value"
	_, err := cb.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	ma, mb := newMutex(t, ca, path), newMutex(t, cb, path)
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	ga, err := la.Guard(ctx)
	require.NoError(t, err)
	require.NoError(t, setGuarded(ctx, ca, ga, target, "A"))
	sidA := ca.SessionID()
	bres := goAcquire(ctx, mb)
	testutil.WaitParticipants(t, mb, 2, 15*time.Second)

	proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sidA]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire A's session")
	var lb *mutex.Lease
	select {
	case r := <-bres:
		require.NoError(t, r.err)
		lb = r.l
	case <-time.After(15 * time.Second):
		t.Fatal("B did not get the lock after A's session expired")
	}
	gb, err := lb.Guard(ctx)
	require.NoError(t, err)
	require.NoError(t, setGuarded(ctx, cb, gb, target, "B"))
	proxy.Heal()

	// A's lease ended on A's side too (Done closed): refused before sending; a guard
	// without that check goes to the server, which refuses it.
	testutil.WaitClosed(t, la.Done(), 10*time.Second, "A's lease.Done after its session expired")
	require.ErrorIs(t, setGuarded(ctx, ca, ga, target, "A late"), framework.ErrFenced)
	err = setGuarded(ctx, ca, framework.NewGuard(ga.Path(), ga.Czxid(), nil), target, "A late")
	require.ErrorIs(t, err, framework.ErrFenced)
	requireData(t, cb, target, "B")

	// Negative control: unguarded, A's late write overwrites B's.
	_, err = ca.SetData(ctx, target, []byte("A late"), -1)
	require.NoError(t, err)
	requireData(t, cb, target, "A late")

	require.ErrorIs(t, la.Release(ctx), mutex.ErrLeaseLost)
	require.NoError(t, lb.Release(ctx))
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

// A holder that passed every check of its own and then paused (here: its write held
// just before it is sent) while its lock node went and another process took the lock:
// the server refuses the write when it finally goes out. The moment is made with a
// request hook, not with timing.
func TestGuardPausedWriterRefusedByServer(t *testing.T) {
	for _, guarded := range []bool{true, false} {
		name := "guarded"
		if !guarded {
			name = "unguarded (negative control)"
		}
		t.Run(name, func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			var hold atomic.Bool
			entered, release := make(chan struct{}), make(chan struct{})
			ca := testutil.Connect(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
				if op == "multi" && hold.CompareAndSwap(true, false) {
					close(entered)
					<-release
				}
			}))
			cb := testutil.Connect(t, srv.ConnectString())
			ctx := testutil.Context(t, 60*time.Second)
			const path, target = "/guard/paused", "/guard/paused-value"
			_, err := cb.Create(ctx, target, []byte("0"), framework.WithParents())
			require.NoError(t, err)
			la, err := newMutex(t, ca, path).Acquire(ctx)
			require.NoError(t, err)
			ga, err := la.Guard(ctx)
			require.NoError(t, err)

			hold.Store(true)
			errc := make(chan error, 1)
			go func() {
				if guarded {
					errc <- setGuarded(ctx, ca, ga, target, "A")
					return
				}
				_, err := ca.Transaction(ctx, framework.SetDataOp(target, []byte("A"), -1))
				errc <- err
			}()
			<-entered // A's write passed its own checks and is about to be sent
			// A's lock node goes (an operator, a revocation by force: A's session
			// alone cannot tell) and B takes the lock and writes.
			require.NoError(t, cb.Delete(ctx, la.Node()))
			lb, err := newMutex(t, cb, path).Acquire(ctx)
			require.NoError(t, err)
			gb, err := lb.Guard(ctx)
			require.NoError(t, err)
			require.NoError(t, setGuarded(ctx, cb, gb, target, "B"))
			close(release)
			err = <-errc
			if guarded {
				require.ErrorIs(t, err, framework.ErrFenced)
				requireData(t, cb, target, "B")
			} else {
				require.NoError(t, err)
				requireData(t, cb, target, "A")
			}
			require.NoError(t, lb.Release(ctx))
			_ = la.Release(ctx)
			assertNoChildren(t, srv.ConnectString(), path, ca, cb)
		})
	}
}
