package barrier_test

import (
	"context"
	"errors"
	"strings"
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
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestNewBadInput(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1") // never started: New must not talk to ZooKeeper
	require.NoError(t, err)
	defer c.Close()

	_, err = barrier.New(nil, "/b")
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	for _, p := range []string{"", "b", "/b/", "/a//b", "/a/./b", "/", "/zookeeper", "/zookeeper/b", "/a\x00b"} {
		_, err := barrier.New(c, p)
		assert.Error(t, err, "path %q", p)
	}
	b, err := barrier.New(c, "/jobs/nightly/start")
	require.NoError(t, err)
	assert.Equal(t, "/jobs/nightly/start", b.Path())
}

// Set and Remove are idempotent; the barrier node is persistent, its parents containers;
// Wait on a barrier that is not set returns at once.
func TestSetRemove(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const path = "/jobs/nightly/start"
	b := newBarrier(t, c, path)

	require.NoError(t, b.Wait(ctx), "a barrier never set does not hold anyone")
	require.NoError(t, b.Remove(ctx), "removing a barrier that is not set is fine")
	require.NoError(t, b.Set(ctx))
	require.NoError(t, b.Set(ctx), "setting a barrier that is set is fine")
	set, err := b.IsSet(ctx)
	require.NoError(t, err)
	assert.True(t, set)

	st, err := c.Exists(ctx, path)
	require.NoError(t, err)
	require.NotNil(t, st)
	assert.Zero(t, st.EphemeralOwner, "the barrier node is persistent: it outlives sessions")

	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = b.Wait(wctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, b.Remove(ctx))
	require.NoError(t, b.Remove(ctx), "removing twice is fine")
	set, err = b.IsSet(ctx)
	require.NoError(t, err)
	assert.False(t, set)
	require.NoError(t, b.Wait(ctx))
	requireGone(t, srv.ConnectString(), path)
	// The parents were created as containers: the server reaps them once empty.
	require.Eventually(t, func() bool {
		st, err := c.Exists(ctx, "/jobs")
		return err == nil && st == nil
	}, 20*time.Second, 100*time.Millisecond, "parents are containers: the server should reap them")
}

// Twenty waiters over two clients: none passes before the Remove, all pass after it.
func TestManyWaitersOneRemove(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	const path = "/jobs/many"
	const clients, perClient = 2, 10
	coord := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	require.NoError(t, newBarrier(t, coord, path).Set(ctx))
	base := watchCount(t, srv)

	var removed atomic.Bool
	var early atomic.Int64
	var getData atomic.Int64
	errs := make(chan error, clients*perClient)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
			if op == "getData" {
				getData.Add(1)
			}
		}))
		b := newBarrier(t, c, path)
		for g := 0; g < perClient; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := b.Wait(ctx)
				if !removed.Load() {
					early.Add(1)
				}
				errs <- err
			}()
		}
	}
	// Every waiter has read the barrier, and the server holds a watch for each client.
	require.Eventually(t, func() bool { return getData.Load() >= clients*perClient }, 15*time.Second, 10*time.Millisecond)
	waitWatches(t, srv, base+clients)
	assert.Empty(t, errs, "a waiter returned while the barrier was set")

	removed.Store(true)
	require.NoError(t, newBarrier(t, coord, path).Remove(ctx))
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("waiters not released by Remove")
	}
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Zero(t, early.Load(), "waiters passed the barrier before it was removed")
	requireGone(t, srv.ConnectString(), path)
}

// A deadline on a barrier never removed returns the deadline's error and leaves no
// goroutine behind (leakcheck); cancellation returns context.Canceled; closing the client
// ends a Wait with framework.ErrClosed.
func TestWaitEndsWithContextOrClose(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const path = "/jobs/never"
	b := newBarrier(t, c, path)
	require.NoError(t, b.Set(ctx))

	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	err := b.Wait(dctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)

	cctx, cancel := context.WithCancel(ctx)
	res := testutil.Go(cctx, b.Wait)
	testutil.NotYet(t, res, 200*time.Millisecond, "Wait on a set barrier")
	cancel()
	require.ErrorIs(t, testutil.Result(t, res, 5*time.Second, "cancelled Wait"), context.Canceled)

	other := testutil.ConnectFailFast(t, srv.ConnectString())
	res = testutil.Go(ctx, newBarrier(t, other, path).Wait)
	testutil.NotYet(t, res, 200*time.Millisecond, "Wait on a set barrier")
	require.NoError(t, other.Close())
	require.ErrorIs(t, testutil.Result(t, res, 5*time.Second, "Wait on a closed client"), framework.ErrClosed)

	require.NoError(t, b.Remove(ctx))
	requireGone(t, srv.ConnectString(), path)
}

// A barrier removed while the waiting client is cut off is noticed once it is back, with
// the same session.
func TestRemovedWhileWaiterDisconnected(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cw := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(10*time.Second))
	cr := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/cutoff"
	require.NoError(t, newBarrier(t, cr, path).Set(ctx))
	base := watchCount(t, srv)
	sid := cw.SessionID()
	st := testutil.States(cw)

	res := testutil.Go(ctx, newBarrier(t, cw, path).Wait)
	waitWatches(t, srv, base+1)
	proxy.Stall()
	proxy.DropConnections()
	testutil.WaitState(t, st, framework.Suspended, 10*time.Second)

	require.NoError(t, newBarrier(t, cr, path).Remove(ctx))
	testutil.NotYet(t, res, 300*time.Millisecond, "Wait while cut off")
	proxy.Heal()
	require.NoError(t, testutil.Result(t, res, 15*time.Second, "Wait after the connection came back"))
	assert.Equal(t, sid, cw.SessionID(), "the session should have survived")
}

// A barrier removed while the waiting client is cut off for so long that its session
// expires is noticed once it is back, with a new session.
func TestRemovedWhileWaiterSessionExpires(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cw := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	cr := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/expired"
	require.NoError(t, newBarrier(t, cr, path).Set(ctx))
	// An ephemeral marker shows when the server has expired the waiter's session.
	_, err := cw.Create(ctx, "/marker", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	base := watchCount(t, srv)
	sid := cw.SessionID()

	res := testutil.Go(ctx, newBarrier(t, cw, path).Wait)
	waitWatches(t, srv, base+1)
	proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sid]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire the waiter's session")
	require.NoError(t, newBarrier(t, cr, path).Remove(ctx))
	testutil.NotYet(t, res, 300*time.Millisecond, "Wait while cut off")
	proxy.Heal()
	require.NoError(t, testutil.Result(t, res, 20*time.Second, "Wait after the session expired"))
	assert.NotEqual(t, sid, cw.SessionID(), "the session should have expired")
}

// Expiry of the waiter's session while the barrier stays set: Wait keeps waiting in the
// new session and is released by a later Remove.
func TestWaitSurvivesSessionExpiry(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cw := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	cr := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/rearm"
	require.NoError(t, newBarrier(t, cr, path).Set(ctx))
	_, err := cw.Create(ctx, "/marker", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	sid := cw.SessionID()
	st := testutil.States(cw)

	res := testutil.Go(ctx, newBarrier(t, cw, path).Wait)
	proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sid]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire the waiter's session")
	base := watchCount(t, srv)
	proxy.Heal()
	testutil.WaitState(t, st, framework.Reconnected, 20*time.Second)
	waitWatches(t, srv, base+1) // the waiter watches again, in its new session
	testutil.NotYet(t, res, 300*time.Millisecond, "Wait after the session expired, barrier still set")

	require.NoError(t, newBarrier(t, cr, path).Remove(ctx))
	require.NoError(t, testutil.Result(t, res, 15*time.Second, "Wait after Remove"))
	requireGone(t, srv.ConnectString(), path)
}

// A Curator waiter is released by a Go Remove, and a Go waiter by a Curator remove.
func TestInteropWithCurator(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := curatortest.Start(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)
	do := func(format string, args ...any) string {
		t.Helper()
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		out, err := tool.Do(dctx, format, args...)
		require.NoError(t, err, format, args)
		return out
	}

	t.Run("curator waits, go removes", func(t *testing.T) {
		const path = "/interop/barrier/one"
		b := newBarrier(t, c, path)
		require.NoError(t, b.Set(ctx))
		assert.Equal(t, "false", do("barrier.wait %s 200", path), "Curator must see the Go barrier")
		require.NoError(t, tool.Async(ctx, "w1", "barrier.wait %s -1", path))
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := tool.WaitDone(wctx, "w1")
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "Curator passed a set barrier")
		require.NoError(t, b.Remove(ctx))
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		ans, err := tool.WaitDone(dctx, "w1")
		cancel()
		require.NoError(t, err)
		assert.Equal(t, "true", ans)
		requireGone(t, srv.ConnectString(), path)
	})

	t.Run("go waits, curator removes", func(t *testing.T) {
		const path = "/interop/barrier/two"
		do("barrier.set %s", path)
		b := newBarrier(t, c, path)
		set, err := b.IsSet(ctx)
		require.NoError(t, err)
		require.True(t, set, "Go must see the Curator barrier")
		res := testutil.Go(ctx, b.Wait)
		testutil.NotYet(t, res, 300*time.Millisecond, "Go Wait on a Curator barrier")
		do("barrier.remove %s", path)
		require.NoError(t, testutil.Result(t, res, 15*time.Second, "Go Wait after Curator's remove"))
		// And the reverse of Set: Go sets, Curator removes, nothing is left.
		require.NoError(t, b.Set(ctx))
		do("barrier.remove %s", path)
		requireGone(t, srv.ConnectString(), path)
	})
}

// errors.Is sees through the barrier's wrapping.
func TestErrorsWrap(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	b := newBarrier(t, c, "/jobs/closed")
	require.NoError(t, c.Close())
	err := b.Set(context.Background())
	require.True(t, errors.Is(err, framework.ErrClosed), "got %v", err)
	require.ErrorIs(t, b.Wait(context.Background()), framework.ErrClosed)
	require.ErrorIs(t, b.Remove(context.Background()), framework.ErrClosed)
}

// Polling Wait with short contexts while the barrier stays set adds no watch: every call
// shares the one data watch the client holds on the barrier node.
func TestPollingWaitSharesOneWatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path = "/barriers/poll"
	b := newBarrier(t, c, path)
	require.NoError(t, b.Set(ctx))

	long := make(chan error, 1)
	go func() { long <- b.Wait(ctx) }()
	require.Eventually(t, func() bool { return c.Watches() == 1 }, 15*time.Second, 10*time.Millisecond,
		"the long waiter's watch")

	const pollers, polls = 3, 30
	var wg sync.WaitGroup
	errs := make(chan error, pollers*polls)
	for range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range polls {
				pctx, pcancel := context.WithTimeout(ctx, 20*time.Millisecond)
				err := b.Wait(pctx)
				pcancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "a poll returned while the barrier was set")
	}
	assert.Equal(t, 1, c.Watches(), "watches the client holds after %d x %d polls", pollers, polls)
	out, err := zktest.FourLetterWord(srv.Addr(), "wchc", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(out, "\t"+path+"\n"), "server watches on %s:\n%s", path, out)

	require.NoError(t, newBarrier(t, c, path).Remove(ctx))
	select {
	case err := <-long:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the waiter was not released")
	}
	assert.Equal(t, 0, c.Watches())
	require.NoError(t, c.Delete(ctx, "/barriers", framework.Quietly()))
}

// On a connection that hangs (the server answers nothing), each of the barrier's calls
// returns once its context ends, with an error matching the context's: Wait as its doc
// says ("when ctx ends Wait returns an error that matches ctx.Err()"), Set, Remove and
// IsSet as every call bounded by a context.
func TestCallsOnHungConnectionReturnWithContext(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/hung"
	b := newBarrier(t, c, path)
	require.NoError(t, b.Set(ctx))
	proxy.Stall()
	defer proxy.Heal()
	for name, call := range map[string]func(context.Context) error{
		"Wait":   b.Wait,
		"Set":    b.Set,
		"Remove": b.Remove,
		"IsSet":  func(ctx context.Context) error { _, err := b.IsSet(ctx); return err },
	} {
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		start := time.Now()
		err := call(dctx)
		took := time.Since(start)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, name)
		assert.Less(t, took, 2*time.Second, "%s returned %v after its context's deadline", name, took-300*time.Millisecond)
	}
	proxy.Heal()
	require.NoError(t, newBarrier(t, testutil.ConnectFailFast(t, srv.ConnectString()), path).Remove(ctx))
}
