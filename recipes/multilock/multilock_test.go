package multilock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestAllOrNone(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	other := testutil.Connect(t, srv.ConnectString())
	bm, err := mutex.New(other, "/ml/b")
	require.NoError(t, err)
	bl, err := bm.Acquire(ctx)
	require.NoError(t, err)

	ml, err := multilock.NewFromPaths(testutil.Connect(t, srv.ConnectString()), "/ml/a", "/ml/b")
	require.NoError(t, err)
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = ml.Acquire(tctx)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/ml/a"), "the lock taken first was given back")
	assert.Len(t, testutil.Children(t, srv.ConnectString(), "/ml/b"), 1, "only the other holder's node remains")

	require.NoError(t, bl.Release(ctx))
	lease, err := ml.Acquire(ctx)
	require.NoError(t, err)
	assert.Len(t, testutil.Children(t, srv.ConnectString(), "/ml/a"), 1)
	assert.Len(t, testutil.Children(t, srv.ConnectString(), "/ml/b"), 1)
	require.NoError(t, lease.Release(ctx))
	assert.ErrorIs(t, lease.Release(ctx), multilock.ErrNotHeld)
	select {
	case <-lease.Done():
	default:
		t.Fatal("Done closes on release")
	}
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/ml/a"))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/ml/b"))
}

// fakeLease records the order of releases; it stands for a lock of another kind.
type orderLease struct {
	name  string
	order *[]string
	err   error
	done  chan struct{}
}

func (l *orderLease) Release(context.Context) error {
	*l.order = append(*l.order, l.name)
	return l.err
}
func (l *orderLease) Done() <-chan struct{} { return l.done }

func TestReleaseOrderAndJoinedErrors(t *testing.T) {
	leakcheck.Check(t)
	var order []string
	boom := errors.New("boom")
	mk := func(name string, err error) multilock.Lock {
		return func(context.Context) (multilock.Lease, error) {
			return &orderLease{name: name, order: &order, err: err, done: make(chan struct{})}, nil
		}
	}
	ml, err := multilock.New(mk("a", nil), mk("b", boom), mk("c", nil))
	require.NoError(t, err)
	lease, err := ml.Acquire(context.Background())
	require.NoError(t, err)
	err = lease.Release(context.Background())
	assert.ErrorIs(t, err, boom, "errors are joined")
	assert.Equal(t, []string{"c", "b", "a"}, order, "every lock is released, in reverse order")

	// A part that fails to acquire makes the earlier ones be released in reverse.
	order = nil
	failing := func(context.Context) (multilock.Lease, error) { return nil, boom }
	ml, err = multilock.New(mk("a", nil), mk("b", nil), failing)
	require.NoError(t, err)
	_, err = ml.Acquire(context.Background())
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, []string{"b", "a"}, order)
}

func TestMixedKindsAndDone(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.Connect(t, proxy.ConnectString())
	m, err := mutex.New(c, "/ml/m")
	require.NoError(t, err)
	rw, err := rwlock.New(c, "/ml/rw")
	require.NoError(t, err)
	sm, err := semaphore.NewMutex(c, "/ml/s")
	require.NoError(t, err)
	// A read lock after the write lock of the same RWLock is no downgrade (that goes
	// through the write lease): it fails at once, and nothing stays held.
	bad, err := multilock.New(multilock.From(rw.WriteLock().Acquire), multilock.From(rw.ReadLock().Acquire))
	require.NoError(t, err)
	_, err = bad.Acquire(ctx)
	require.ErrorIs(t, err, rwlock.ErrAlreadyHeld)
	ml, err := multilock.New(multilock.From(m.Acquire), multilock.From(rw.WriteLock().Acquire),
		multilock.From(sm.Acquire))
	require.NoError(t, err)
	lease, err := ml.Acquire(ctx)
	require.NoError(t, err)
	assert.Len(t, lease.Parts(), 3)
	proxy.DropConnections() // Suspended: under the standard policy every part may be lost
	select {
	case <-lease.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done did not close when the parts may have been lost")
	}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_ = lease.Release(rctx) // parts report the loss; their nodes are removed anyway
	require.NoError(t, c.WaitGuaranteedDeletes(rctx))
	for _, p := range []string{"/ml/m", "/ml/rw", "/ml/s/leases", "/ml/s/locks"} {
		require.Eventually(t, func() bool {
			kids, err := zktest.Children(ctx, srv.ConnectString(), p)
			return err == nil && len(kids) == 0
		}, 10*time.Second, 50*time.Millisecond, p)
	}
}

func TestBadInput(t *testing.T) {
	_, err := multilock.New()
	assert.ErrorIs(t, err, multilock.ErrNoLocks)
	_, err = multilock.New(nil)
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	var nilAcquire func(context.Context) (*mutex.Lease, error)
	_, err = multilock.New(multilock.From(nilAcquire))
	assert.ErrorIs(t, err, framework.ErrInvalidArgument, "From(nil) is refused, not a panic later")
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	_, err = multilock.NewFromPaths(c, "/a", "/b", "/a")
	assert.ErrorIs(t, err, multilock.ErrDuplicatePath)
	_, err = multilock.NewFromPaths(c)
	assert.ErrorIs(t, err, multilock.ErrNoLocks)
	_, err = multilock.NewFromPaths(c, "bad")
	assert.ErrorIs(t, err, framework.ErrInvalidPath)
}
