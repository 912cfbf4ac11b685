package rwlock_test

import (
	"context"
	"errors"
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
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/zktest"
)

func newRW(t *testing.T, c *framework.Client, path string) *rwlock.RWLock {
	rw, err := rwlock.New(c, path)
	require.NoError(t, err)
	return rw
}

func TestReadersShareWritersExclusive(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var readers, writers, maxReaders atomic.Int64
	var violations atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for ci := 0; ci < 3; ci++ {
		c := testutil.Connect(t, srv.ConnectString())
		for g := 0; g < 4; g++ {
			rw := newRW(t, c, "/rw/mixed")
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < 6; r++ {
					write := (g+r)%4 == 0
					lock := rw.ReadLock()
					if write {
						lock = rw.WriteLock()
					}
					l, err := lock.Acquire(ctx)
					if err != nil {
						errs <- err
						return
					}
					if write {
						if writers.Add(1) > 1 || readers.Load() > 0 {
							violations.Add(1)
						}
						time.Sleep(2 * time.Millisecond) // hold it a moment: overlaps would show
						writers.Add(-1)
					} else {
						n := readers.Add(1)
						for m := maxReaders.Load(); n > m && !maxReaders.CompareAndSwap(m, n); m = maxReaders.Load() {
						}
						if writers.Load() > 0 {
							violations.Add(1)
						}
						time.Sleep(5 * time.Millisecond)
						readers.Add(-1)
					}
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
	assert.Zero(t, violations.Load(), "a writer overlapped with someone")
	t.Logf("readers at once, at most: %d", maxReaders.Load())
	testutil.RequireNoChildren(t, srv.ConnectString(), "/rw/mixed")
}

// TestReadersHoldTogether: readers in three clients each take the read lock and hold it
// until all three are inside at once; with no writer queued, none waits for another.
func TestReadersHoldTogether(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	const n = 3
	var inside sync.WaitGroup
	inside.Add(n)
	all := make(chan struct{})
	go func() { inside.Wait(); close(all) }()
	errs := make(chan error, n)
	for range n {
		rw := newRW(t, testutil.Connect(t, srv.ConnectString()), "/rw/shared")
		go func() {
			l, err := rw.ReadLock().Acquire(ctx)
			if err != nil {
				inside.Done()
				errs <- err
				return
			}
			inside.Done()
			select {
			case <-all:
			case <-ctx.Done():
			}
			errs <- errors.Join(ctx.Err(), l.Release(context.WithoutCancel(ctx)))
		}()
	}
	for range n {
		select {
		case err := <-errs:
			require.NoError(t, err, "every reader holds the read lock while the others do")
		case <-ctx.Done():
			t.Fatal("the readers did not finish")
		}
	}
	testutil.RequireNoChildren(t, srv.ConnectString(), "/rw/shared")
}

func TestWriterNotStarvedByLaterReaders(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := testutil.Connect(t, srv.ConnectString())
	rw := newRW(t, c, "/rw/starve")
	first, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	writerGot := make(chan struct{})
	go func() {
		l, err := newRW(t, c, "/rw/starve").WriteLock().Acquire(ctx)
		if err == nil {
			close(writerGot)
			_ = l.Release(ctx)
		}
	}()
	require.Eventually(t, func() bool {
		p, err := rw.WriteLock().Participants(ctx)
		return err == nil && len(p) == 1
	}, 10*time.Second, 10*time.Millisecond)
	// A reader that comes after the queued writer must wait for it.
	tctx, tcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = newRW(t, c, "/rw/starve").ReadLock().Acquire(tctx)
	tcancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a later reader went ahead of a queued writer")
	_, err = newRW(t, c, "/rw/starve").ReadLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, rwlock.ErrLocked)
	require.NoError(t, first.Release(ctx))
	select {
	case <-writerGot:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer never got the lock")
	}
	testutil.RequireNoChildren(t, srv.ConnectString(), "/rw/starve")
}

func TestDowngradeWithQueuedWriter(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := testutil.Connect(t, srv.ConnectString())
	rw := newRW(t, c, "/rw/down")
	w, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	wctx, wcancel := w.Context(ctx)
	defer wcancel()

	other := newRW(t, testutil.Connect(t, srv.ConnectString()), "/rw/down")
	var writerHolds atomic.Bool
	otherDone := make(chan error, 1)
	go func() {
		l, err := other.WriteLock().Acquire(ctx)
		if err != nil {
			otherDone <- err
			return
		}
		writerHolds.Store(true)
		otherDone <- l.Release(ctx)
	}()
	require.Eventually(t, func() bool {
		p, err := rw.WriteLock().Participants(ctx)
		return err == nil && len(p) == 2
	}, 10*time.Second, 10*time.Millisecond)

	r, err := w.Downgrade(wctx) // granted at once although a writer waits
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	all, err := rw.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, r.Node(), all[0], "the downgraded reader sorts ahead of the queued writer")
	time.Sleep(300 * time.Millisecond) // give the queued writer every chance to slip in
	assert.False(t, writerHolds.Load(), "a queued writer slipped in between downgrade and write release")
	require.NoError(t, r.Release(ctx))
	require.NoError(t, <-otherDone)
	assert.True(t, writerHolds.Load())
	testutil.RequireNoChildren(t, srv.ConnectString(), "/rw/down")
}

func TestUpgradeRefusedAndMisuse(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	c := testutil.Connect(t, srv.ConnectString())
	rw := newRW(t, c, "/rw/up")
	r, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	rctx, cancel := r.Context(ctx)
	defer cancel()
	_, err = rw.WriteLock().Acquire(rctx)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	_, err = rw.ReadLock().Acquire(rctx)
	assert.ErrorIs(t, err, rwlock.ErrAlreadyHeld, "no re-entry through the context")
	_, err = r.Downgrade(ctx)
	assert.ErrorIs(t, err, rwlock.ErrNotHeld, "a read lease does not downgrade")
	again, err := r.Reenter()
	require.NoError(t, err)
	assert.Equal(t, r.Node(), again.Node(), "the read lock is re-entrant through the lease")
	require.NoError(t, r.Release(ctx))
	require.NoError(t, again.Release(ctx))
	assert.ErrorIs(t, r.Release(ctx), rwlock.ErrNotHeld)
	assert.ErrorIs(t, again.Release(ctx), rwlock.ErrNotHeld)

	_, err = rwlock.New(nil, "/rw/x")
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = rwlock.New(c, "rw/x")
	assert.ErrorIs(t, err, framework.ErrInvalidPath)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/rw/up")
}

func TestWriterSessionLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proxy := zktest.NewProxy(t, srv.ConnectString())
	lost := testutil.Connect(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()), framework.WithSessionTimeout(1500*time.Millisecond))
	w, err := newRW(t, lost, "/rw/lost").WriteLock().Acquire(ctx)
	require.NoError(t, err)
	tokenW := testutil.Token(w) // read while the writer still holds it
	require.Greater(t, tokenW, int64(0))
	reader := newRW(t, testutil.Connect(t, srv.ConnectString()), "/rw/lost")
	got := make(chan *rwlock.Lease, 1)
	go func() {
		l, err := reader.ReadLock().Acquire(ctx)
		if err == nil {
			got <- l
		}
		close(got)
	}()
	proxy.Stall()
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the cut-off writer's lease did not end")
	}
	var l *rwlock.Lease
	select {
	case l = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the reader never got the lock after the writer's session expired")
	}
	require.NotNil(t, l)
	assert.Greater(t, testutil.Token(l), tokenW)
	_, err = w.Token(ctx)
	assert.ErrorIs(t, err, rwlock.ErrLeaseLost, "a lost lease answers no token")
	proxy.Heal()
	assert.ErrorIs(t, w.Release(ctx), rwlock.ErrLeaseLost)
	require.NoError(t, l.Release(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), "/rw/lost")
}

func TestCuratorReadWriteInterop(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	java := curatortest.Start(t, srv.ConnectString())
	rw := newRW(t, testutil.Connect(t, srv.ConnectString()), "/rw/interop")
	_, err := java.Do(ctx, "rw.new j /rw/interop")
	require.NoError(t, err)

	// A Java reader and a Go reader share the lock; a Go writer waits for the Java reader.
	out, err := java.Do(ctx, "rw.readacquire j 5000")
	require.NoError(t, err)
	require.Equal(t, "true", out)
	r, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, r.Release(ctx))
	_, err = rw.WriteLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, rwlock.ErrLocked)
	_, err = java.Do(ctx, "rw.readrelease j")
	require.NoError(t, err)

	// A Go writer excludes a Java writer and a Java reader.
	w, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	out, err = java.Do(ctx, "rw.writeacquire j 300")
	require.NoError(t, err)
	assert.Equal(t, "false", out)
	out, err = java.Do(ctx, "rw.readacquire j 300")
	require.NoError(t, err)
	assert.Equal(t, "false", out)
	require.NoError(t, java.Async(ctx, "jw", "rw.writeacquire j 10000"))
	require.Eventually(t, func() bool {
		p, err := rw.WriteLock().Participants(ctx)
		return err == nil && len(p) == 2
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, w.Release(ctx))
	out, err = java.WaitDone(ctx, "jw")
	require.NoError(t, err)
	assert.Contains(t, out, "true")
	_, err = java.Do(ctx, "rw.writerelease j")
	require.NoError(t, err)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/rw/interop")
}

// A downgrade through a write lease that may have been lost is refused: it must never
// create a read node that sorts ahead of another process's writer.
func TestDowngradeWithLostWriteLease(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.Connect(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()), framework.WithSessionTimeout(1500*time.Millisecond))
	rw := newRW(t, c, "/rw/lostdown")
	w, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	wctx, wcancel := w.Context(ctx)
	defer wcancel()
	proxy.DropConnections() // Suspended: under the standard policy the write lease may be lost
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the write lease did not end")
	}
	_, err = w.Downgrade(context.WithoutCancel(wctx))
	assert.ErrorIs(t, err, rwlock.ErrLeaseLost)
	_, err = w.Reenter()
	assert.ErrorIs(t, err, rwlock.ErrLeaseLost, "re-entering a lost lease is refused, not queued behind itself")
	_ = w.Release(ctx)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/rw/lostdown")
}
