package semaphore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// requireEmpty checks that the semaphore left nothing under leases and locks.
func requireEmpty(t *testing.T, connect, path string) {
	t.Helper()
	for _, sub := range []string{"/leases", "/locks"} {
		testutil.RequireNoChildren(t, connect, path+sub)
	}
}

// TestNeverMoreThanMaxHolders has nine workers in three clients take a three-lease
// semaphore five times each. The first holders wait, holding their leases, until max of
// them are inside at once (so the semaphore is seen full without relying on two holds
// happening to overlap); no worker ever sees more than max holders.
func TestNeverMoreThanMaxHolders(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const max = 3
	var holders, peak, violations atomic.Int64
	full := make(chan struct{}) // closed when max holders are inside together
	var fullOnce sync.Once
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for ci := 0; ci < 3; ci++ {
		c := testutil.Connect(t, srv.ConnectString())
		for g := 0; g < 3; g++ {
			s, err := semaphore.New(c, "/sem/pool", max)
			require.NoError(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < 5; r++ {
					l, err := s.Acquire(ctx)
					if err != nil {
						errs <- err
						return
					}
					n := holders.Add(1)
					if n > max {
						violations.Add(1)
					}
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					if n == max {
						fullOnce.Do(func() { close(full) })
					}
					// Hold until the semaphore has been full once: the first max holders
					// meet here, every later one passes straight through.
					select {
					case <-full:
					case <-ctx.Done():
						errs <- fmt.Errorf("waiting for %d holders at once: %w", max, ctx.Err())
						return
					}
					holders.Add(-1)
					if err := l.Release(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Zero(t, violations.Load(), "more than max holders at once")
	assert.Equal(t, int64(max), peak.Load(), "the semaphore was never full")
	requireEmpty(t, srv.ConnectString(), "/sem/pool")
}

func TestAcquireNAndTry(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	c := testutil.Connect(t, srv.ConnectString())
	s, err := semaphore.New(c, "/sem/n", 3, semaphore.WithNodeData([]byte("worker-1")))
	require.NoError(t, err)
	ls, err := s.AcquireN(ctx, 2)
	require.NoError(t, err)
	require.Len(t, ls, 2)
	d, err := ls[0].Data(ctx)
	require.NoError(t, err)
	assert.Equal(t, "worker-1", string(d))
	p, err := s.Participants(ctx)
	require.NoError(t, err)
	assert.Len(t, p, 2)
	assert.Regexp(t, `^_c_[0-9a-f-]{36}-lease-\d{10}$`, p[0])

	_, err = s.TryAcquireN(ctx, 2)
	assert.ErrorIs(t, err, semaphore.ErrNoLeases)
	kids, err := zktest.Children(ctx, srv.ConnectString(), "/sem/n/leases")
	require.NoError(t, err)
	assert.Len(t, kids, 2, "a failed try returns the lease it took")
	one, err := s.TryAcquire(ctx)
	require.NoError(t, err)
	require.NoError(t, semaphore.ReturnAll(ctx, append(ls, one)...))
	assert.ErrorIs(t, one.Release(ctx), semaphore.ErrNotHeld)

	// Bad input.
	_, err = semaphore.New(c, "/sem/bad", 0)
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = semaphore.New(c, "/sem/bad", -2)
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = semaphore.New(nil, "/sem/bad", 1)
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = semaphore.New(c, "sem", 1)
	assert.ErrorIs(t, err, framework.ErrInvalidPath)
	_, err = s.AcquireN(ctx, 4)
	assert.ErrorIs(t, err, semaphore.ErrTooMany)
	_, err = s.AcquireN(ctx, 0)
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	requireEmpty(t, srv.ConnectString(), "/sem/n")
}

func TestCancelledAcquireLeavesNothing(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	s, err := semaphore.New(testutil.Connect(t, srv.ConnectString()), "/sem/cancel", 2)
	require.NoError(t, err)
	held, err := s.AcquireN(ctx, 2)
	require.NoError(t, err)
	other, err := semaphore.New(testutil.Connect(t, srv.ConnectString()), "/sem/cancel", 2)
	require.NoError(t, err)
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = other.Acquire(tctx)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	kids, err := zktest.Children(ctx, srv.ConnectString(), "/sem/cancel/leases")
	require.NoError(t, err)
	assert.Len(t, kids, 2, "the cancelled acquirer's lease node is gone")
	require.NoError(t, semaphore.ReturnAll(ctx, held...))
	// Taking 2 of 2 while one is held times out and returns the one it got.
	h1, err := s.Acquire(ctx)
	require.NoError(t, err)
	tctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = other.AcquireN(tctx, 2)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, h1.Release(ctx))
	requireEmpty(t, srv.ConnectString(), "/sem/cancel")
}

func TestSharedCount(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := testutil.Connect(t, srv.ConnectString())
	s, err := semaphore.NewShared(c, "/sem/shared", "/sem/count", 1)
	require.NoError(t, err)
	a, err := s.Acquire(ctx)
	require.NoError(t, err)
	data, _, err := c.GetData(ctx, "/sem/count")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 1}, data, "the seed is stored as Curator's SharedCount stores it")
	_, err = s.TryAcquire(ctx)
	assert.ErrorIs(t, err, semaphore.ErrNoLeases)
	// A waiter is let in when the count rises.
	got := make(chan *semaphore.Lease, 1)
	go func() {
		l, err := s.Acquire(ctx)
		if err == nil {
			got <- l
		}
		close(got)
	}()
	require.NoError(t, semaphore.SetCount(ctx, c, "/sem/count", 2))
	var b *semaphore.Lease
	select {
	case b = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("raising the shared count did not let the waiter in")
	}
	require.NotNil(t, b)
	require.NoError(t, semaphore.ReturnAll(ctx, a, b))
	_, err = c.SetData(ctx, "/sem/count", []byte("x"), -1)
	require.NoError(t, err)
	_, err = s.Acquire(ctx)
	assert.ErrorIs(t, err, semaphore.ErrBadCount)
	requireEmpty(t, srv.ConnectString(), "/sem/shared")
}

func TestHolderSessionExpiryFreesLease(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cut := testutil.Connect(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()), framework.WithSessionTimeout(1500*time.Millisecond))
	s1, err := semaphore.New(cut, "/sem/exp", 1)
	require.NoError(t, err)
	held, err := s1.Acquire(ctx)
	require.NoError(t, err)
	s2, err := semaphore.New(testutil.Connect(t, srv.ConnectString()), "/sem/exp", 1)
	require.NoError(t, err)
	got := make(chan *semaphore.Lease, 1)
	go func() {
		l, err := s2.Acquire(ctx)
		if err == nil {
			got <- l
		}
		close(got)
	}()
	proxy.Stall()
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the cut-off holder's lease did not end")
	}
	var l *semaphore.Lease
	select {
	case l = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter never got the expired holder's lease")
	}
	require.NotNil(t, l)
	proxy.Heal()
	assert.ErrorIs(t, held.Release(ctx), semaphore.ErrLeaseLost)
	require.NoError(t, l.Release(ctx))
	requireEmpty(t, srv.ConnectString(), "/sem/exp")
}

func TestSemaphoreMutexNotReentrant(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	m, err := semaphore.NewMutex(testutil.Connect(t, srv.ConnectString()), "/sem/mutex")
	require.NoError(t, err)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	lctx, cancel := l.Context(ctx)
	defer cancel()
	_, err = m.Acquire(lctx)
	assert.ErrorIs(t, err, semaphore.ErrAlreadyHeld, "not re-entrant: an error, not a deadlock")
	_, err = m.TryAcquire(ctx)
	assert.ErrorIs(t, err, semaphore.ErrNoLeases)
	require.NoError(t, l.Release(ctx))
	requireEmpty(t, srv.ConnectString(), "/sem/mutex")
}

func TestCuratorSemaphoreInterop(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	java := curatortest.Start(t, srv.ConnectString())
	s, err := semaphore.New(testutil.Connect(t, srv.ConnectString()), "/sem/interop", 2)
	require.NoError(t, err)
	_, err = java.Do(ctx, "sem.new j /sem/interop 2")
	require.NoError(t, err)
	out, err := java.Do(ctx, "sem.acquire j 1 5000")
	require.NoError(t, err)
	assert.Equal(t, "1", out)
	g, err := s.Acquire(ctx)
	require.NoError(t, err)
	// Both leases are taken: Java and Go each see no room.
	out, err = java.Do(ctx, "sem.acquire j 1 300")
	require.NoError(t, err)
	assert.Equal(t, "0", out)
	_, err = s.TryAcquire(ctx)
	assert.ErrorIs(t, err, semaphore.ErrNoLeases)
	// A Java waiter gets the Go lease when it is returned.
	require.NoError(t, java.Async(ctx, "jw", "sem.acquire j 1 10000"))
	// The Java waiter queues: its lease node is there, a third beside the two held.
	require.Eventually(t, func() bool {
		kids, err := zktest.Children(ctx, srv.ConnectString(), "/sem/interop/leases")
		return err == nil && len(kids) == 3
	}, 20*time.Second, 20*time.Millisecond, "the Java waiter never queued")
	require.NoError(t, g.Release(ctx))
	out, err = java.WaitDone(ctx, "jw")
	require.NoError(t, err)
	assert.Contains(t, out, "1")
	_, err = java.Do(ctx, "sem.releaseall j")
	require.NoError(t, err)

	// Semaphore mutexes exclude each other across the languages.
	m, err := semaphore.NewMutex(testutil.Connect(t, srv.ConnectString()), "/sem/imutex")
	require.NoError(t, err)
	_, err = java.Do(ctx, "semmutex.new jm /sem/imutex")
	require.NoError(t, err)
	ml, err := m.Acquire(ctx)
	require.NoError(t, err)
	out, err = java.Do(ctx, "semmutex.acquire jm 300")
	require.NoError(t, err)
	assert.Equal(t, "false", out)
	require.NoError(t, ml.Release(ctx))
	out, err = java.Do(ctx, "semmutex.acquire jm 5000")
	require.NoError(t, err)
	assert.Equal(t, "true", out)
	_, err = m.TryAcquire(ctx)
	assert.ErrorIs(t, err, semaphore.ErrNoLeases)
	_, err = java.Do(ctx, "semmutex.release jm")
	require.NoError(t, err)
	requireEmpty(t, srv.ConnectString(), "/sem/interop")
	requireEmpty(t, srv.ConnectString(), "/sem/imutex")
}

// Asking a shared-count semaphore for more leases than its count fails with ErrTooMany
// ("ErrTooMany is returned when asking for more leases than the maximum"), as it does for
// a fixed maximum, rather than holding what it can and waiting for leases that can never
// all be had.
func TestSharedAcquireNMoreThanCountIsTooMany(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	require.NoError(t, semaphore.SetCount(ctx, c, "/semtm/count", 2))
	s, err := semaphore.NewShared(c, "/semtm/sem", "/semtm/count", 2)
	require.NoError(t, err)
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ls, err := s.AcquireN(actx, 3)
	if err == nil {
		_ = semaphore.ReturnAll(ctx, ls...)
	}
	require.ErrorIs(t, err, semaphore.ErrTooMany, "3 leases of a semaphore whose shared count is 2")
	requireEmpty(t, srv.ConnectString(), "/semtm/sem")
}

// TryAcquire takes a lease when one is free now (its doc: "TryAcquire takes one lease if
// one is free now, and returns ErrNoLeases otherwise"; ErrNoLeases: "when no lease is
// free now"). Another participant that holds the inner lock for its own acquisition (a
// Curator peer paused between taking the inner lock and making its lease node: here its
// inner lock node, made by another session) leaves 2 of 3 leases free whatever it does:
// a try must not report that no lease is free.
func TestTryAcquireWithFreeLeaseWhileInnerLockHeld(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, srv.ConnectString())
	peer := testutil.Connect(t, srv.ConnectString())
	const path = "/semtry/s"
	s, err := semaphore.New(c, path, 3)
	require.NoError(t, err)
	held, err := s.Acquire(ctx) // 1 of 3 taken: 2 free
	require.NoError(t, err)
	_, err = peer.Create(ctx, path+"/locks/_c_0a1b2c3d-0000-4000-8000-000000000001-lock-", nil,
		framework.WithMode(framework.EphemeralSequential), framework.WithParents())
	require.NoError(t, err)
	kids, err := zktest.Children(ctx, srv.ConnectString(), path+"/leases")
	require.NoError(t, err)
	require.Len(t, kids, 1)
	l, err := s.TryAcquire(ctx)
	require.NoError(t, err, "TryAcquire with %d of 3 leases taken", len(kids))
	require.NoError(t, semaphore.ReturnAll(ctx, held, l))
}
