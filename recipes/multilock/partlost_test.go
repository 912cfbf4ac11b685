package multilock_test

import (
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

// TestPartLostWhileWaitingFailsAcquire: a multi-lock holds a and waits for b when its
// client is cut off until the server expires its session; another process then takes a,
// and b's holder lets go. Once reconnected (a new session), the multi-lock gets b again,
// but a is not its any more: Acquire must not report success (two holders of a). It fails
// with ErrLeaseLost and leaves nothing: a is the other process's alone, b is free. So for
// NewFromPaths and for New over two mutexes.
func TestPartLostWhileWaitingFailsAcquire(t *testing.T) {
	t.Run("NewFromPaths", func(t *testing.T) {
		testPartLostWhileWaiting(t, "/ml/partlost/paths", multilock.NewFromPaths)
	})
	t.Run("New", func(t *testing.T) {
		testPartLostWhileWaiting(t, "/ml/partlost/new", func(c *framework.Client, paths ...string) (*multilock.MultiLock, error) {
			var ls []multilock.Lock
			for _, p := range paths {
				m, err := mutex.New(c, p)
				if err != nil {
					return nil, err
				}
				ls = append(ls, multilock.From(m.Acquire))
			}
			return multilock.New(ls...)
		})
	})
}

func testPartLostWhileWaiting(t *testing.T, path string, newML func(*framework.Client, ...string) (*multilock.MultiLock, error)) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	a, b := path+"/a", path+"/b"
	ca := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(2*time.Second))
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	ma, err := mutex.New(other, a)
	require.NoError(t, err)
	mb, err := mutex.New(other, b)
	require.NoError(t, err)
	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)
	ml, err := newML(ca, a, b)
	require.NoError(t, err)

	res := make(chan error, 1)
	go func() {
		l, err := ml.Acquire(ctx)
		if err == nil {
			_ = l.Release(ctx)
		}
		res <- err
	}()
	require.Eventually(t, func() bool {
		return len(testutil.Children(t, srv.ConnectString(), a)) == 1 && len(testutil.Children(t, srv.ConnectString(), b)) == 2
	}, 20*time.Second, 10*time.Millisecond, "the multi-lock does not hold a and wait for b")

	sid := ca.SessionID()
	proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sid]) == 0
	}, 30*time.Second, 50*time.Millisecond, "the server did not expire the multi-lock's session")
	la, err := ma.Acquire(ctx)
	require.NoError(t, err, "another process could not take a")
	require.NoError(t, lb.Release(ctx))
	proxy.Heal()

	select {
	case err := <-res:
		require.ErrorIs(t, err, mutex.ErrLeaseLost, "Acquire succeeded while a was another process's")
	case <-ctx.Done():
		t.Fatal("Acquire did not return")
	}
	require.NoError(t, ca.WaitGuaranteedDeletes(ctx))
	require.Len(t, testutil.Children(t, srv.ConnectString(), a), 1, "a holds a node besides the other process's")
	testutil.RequireNoChildren(t, srv.ConnectString(), b)
	require.NoError(t, la.Release(ctx))
}
