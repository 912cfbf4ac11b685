package atomic_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestNewBadInput(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	defer c.Close()
	_, err = atomic.NewLong(nil, "/n")
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	for _, p := range []string{"", "n", "/n/", "/a//b", "/", "/zookeeper", "/a\x00b"} {
		_, err := atomic.NewInt(c, p)
		assert.Error(t, err, "path %q", p)
	}
	_, err = atomic.NewLong(c, "/n", atomic.WithPromotedToLock("bad", nil, 0))
	assert.Error(t, err)
	_, err = atomic.NewLong(c, "/n", atomic.WithPromotedToLock("/l", nil, -time.Second))
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	l, err := atomic.NewLong(c, "/n")
	require.NoError(t, err)
	_, err = l.Increment(t.Context())
	assert.ErrorIs(t, err, framework.ErrNotStarted, "a client never started")
	require.NoError(t, c.Close())
	_, err = l.Increment(t.Context())
	assert.ErrorIs(t, err, framework.ErrClosed)
	assert.NotErrorIs(t, err, atomic.ErrUnknownOutcome, "a closed client sends nothing")
}

func TestLongOperations(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	l, err := atomic.NewLong(c, "/counters/orders")
	require.NoError(t, err)

	r, err := l.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, atomic.Result[int64]{Succeeded: true}, r, "no node: 0")

	r, err = l.Increment(ctx)
	require.NoError(t, err)
	assert.True(t, r.Succeeded)
	assert.Equal(t, int64(0), r.Pre)
	assert.Equal(t, int64(1), r.Post)
	assert.Equal(t, 1, r.Stats.OptimisticTries)
	data, _, err := c.GetData(ctx, "/counters/orders")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 1}, data, "8 big-endian bytes, as Curator")

	r, err = l.Add(ctx, 10)
	require.NoError(t, err)
	assert.Equal(t, [2]int64{1, 11}, [2]int64{r.Pre, r.Post})
	r, err = l.Subtract(ctx, 3)
	require.NoError(t, err)
	assert.Equal(t, int64(8), r.Post)
	r, err = l.Decrement(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(7), r.Post)

	r, err = l.CompareAndSet(ctx, 100, 5)
	require.NoError(t, err)
	assert.False(t, r.Succeeded)
	assert.Equal(t, int64(7), r.Pre)
	r, err = l.CompareAndSet(ctx, 7, 5)
	require.NoError(t, err)
	assert.True(t, r.Succeeded)
	assert.Equal(t, int64(5), r.Post)

	r, err = l.TrySet(ctx, 42)
	require.NoError(t, err)
	assert.Equal(t, [2]int64{5, 42}, [2]int64{r.Pre, r.Post})
	require.NoError(t, l.ForceSet(ctx, -9))
	ok, err := l.Initialize(ctx, 1)
	require.NoError(t, err)
	assert.False(t, ok, "already there")
	r, err = l.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(-9), r.Post)

	// Overflow wraps as in Java.
	require.NoError(t, l.ForceSet(ctx, math.MaxInt64))
	r, err = l.Increment(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(math.MinInt64), r.Post)

	i, err := atomic.NewInt(c, "/counters/small")
	require.NoError(t, err)
	ok, err = i.Initialize(ctx, math.MaxInt32)
	require.NoError(t, err)
	assert.True(t, ok)
	ri, err := i.Increment(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(math.MinInt32), ri.Post)
	data, _, err = c.GetData(ctx, "/counters/small")
	require.NoError(t, err)
	assert.Equal(t, []byte{0x80, 0, 0, 0}, data, "4 big-endian bytes, as Curator")

	v, err := atomic.NewValue(c, "/counters/raw")
	require.NoError(t, err)
	rv, err := v.TrySet(ctx, []byte("hello"))
	require.NoError(t, err)
	assert.Nil(t, rv.Pre)
	assert.Equal(t, []byte("hello"), rv.Post)
}

// Data of the wrong length, written by someone else: a clear error naming the bytes,
// and nothing written.
func TestBadData(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	_, err := c.Create(ctx, "/odd", []byte{1, 2, 3}, framework.WithParents())
	require.NoError(t, err)
	l, err := atomic.NewLong(c, "/odd")
	require.NoError(t, err)
	_, err = l.Increment(ctx)
	var bd *atomic.BadDataError
	require.ErrorAs(t, err, &bd)
	assert.ErrorIs(t, err, atomic.ErrBadData)
	assert.Equal(t, []byte{1, 2, 3}, bd.Data)
	assert.Contains(t, err.Error(), "3 bytes (01 02 03), not a 8-byte")
	_, err = l.Get(ctx)
	require.ErrorAs(t, err, &bd)
	data, _, err := c.GetData(ctx, "/odd")
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2, 3}, data)
}

// N goroutines in each of several clients increment M times: the count is exact, and
// every call's result is what happened.
func TestConcurrentIncrements(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 3*time.Minute)
	const clients, goroutines, each = 3, 4, 25
	policy, err := retry.NewNTimes(1000, time.Millisecond)
	require.NoError(t, err)
	errs := make(chan error, clients*goroutines)
	var wg sync.WaitGroup
	for ci := range clients {
		c := testutil.ConnectFailFast(t, srv.ConnectString())
		l, err := atomic.NewLong(c, "/counters/shared", atomic.WithRetryPolicy(policy))
		require.NoError(t, err)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					r, err := l.Increment(ctx)
					if err != nil || !r.Succeeded || r.Post != r.Pre+1 {
						errs <- fmt.Errorf("client %d goroutine %d: %+v, %v", ci, g, r, err)
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
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	l, err := atomic.NewLong(c, "/counters/shared")
	require.NoError(t, err)
	r, err := l.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(clients*goroutines*each), r.Post)
}

// With no optimistic retries and a promotion lock, contended increments are promoted to
// the lock (which excludes only promoted writers: an optimistic first try can still get in
// between, as in Curator); callers that did not succeed try again. The count is exact and
// the lock leaves no node behind.
func TestPromotedToLock(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 3*time.Minute)
	none, err := retry.NewNTimes(0, 0)
	require.NoError(t, err)
	underLock, err := retry.NewNTimes(3, 0)
	require.NoError(t, err)
	const goroutines, each = 6, 10
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		promoted int
		failed   []string
	)
	for g := range goroutines {
		c := testutil.ConnectFailFast(t, srv.ConnectString())
		l, err := atomic.NewLong(c, "/counters/p", atomic.WithRetryPolicy(none),
			atomic.WithPromotedToLock("/counters/p-lock", underLock, 0))
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				r, err := l.Increment(ctx)
				mu.Lock()
				promoted += r.Stats.PromotedTries
				if r.Stats.PromotedTries > 0 && r.Stats.PromotedTime <= 0 {
					failed = append(failed, fmt.Sprintf("%d: promoted time not measured: %+v", g, r))
				}
				mu.Unlock()
				if err != nil {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%d: %+v %v", g, r, err))
					mu.Unlock()
					return
				}
				if r.Succeeded {
					done++
				}
			}
		}()
	}
	wg.Wait()
	assert.Empty(t, failed)
	assert.Positive(t, promoted, "contended increments were promoted")
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	l, err := atomic.NewLong(c, "/counters/p")
	require.NoError(t, err)
	r, err := l.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(goroutines*each), r.Post)
	t.Logf("promoted tries: %d", promoted)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/counters/p-lock")
}

// The reply to the create of a first increment is lost: the server applied it, the
// client's retry finds the node there. The result is unknown — not a failure that would
// make the caller (or the optimistic loop) increment again.
func TestUnknownOutcomeLostCreateReply(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	l, err := atomic.NewLong(c, "/counters/lost")
	require.NoError(t, err)
	_, err = c.Create(ctx, "/counters", nil) // so that the next create is the counter's
	require.NoError(t, err)

	proxy.DropNextCreateReply()
	r, err := l.Increment(ctx)
	require.ErrorIs(t, err, atomic.ErrUnknownOutcome, "result %+v", r)
	assert.False(t, r.Succeeded)
	assert.Equal(t, int64(1), r.Post, "the value that may have been written")

	direct := testutil.ConnectFailFast(t, srv.ConnectString())
	data, _, err := direct.GetData(ctx, "/counters/lost")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 1}, data, "applied once, not twice")
}

// The connection is cut while a versioned setData is in flight, and the client does not
// retry: the result is unknown.
func TestUnknownOutcomeConnectionLostInFlight(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var (
		mu  sync.Mutex
		arm bool
	)
	noRetry, err := retry.NewNTimes(0, 0)
	require.NoError(t, err)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(),
		framework.WithRetryPolicy(noRetry),
		framework.WithRequestObserver(func(ri framework.RequestInfo) {
			mu.Lock()
			defer mu.Unlock()
			if arm && ri.Op == "getData" && ri.Path == "/counters/cut" && ri.Err == nil {
				arm = false
				proxy.Stall() // the setData that follows goes into the stall
			}
		}))
	ctx := testutil.Context(t, 90*time.Second)
	l, err := atomic.NewLong(c, "/counters/cut")
	require.NoError(t, err)
	ok, err := l.Initialize(ctx, 5)
	require.NoError(t, err)
	require.True(t, ok)

	mu.Lock()
	arm = true
	mu.Unlock()
	r, err := l.Increment(ctx)
	proxy.Heal()
	require.ErrorIs(t, err, atomic.ErrUnknownOutcome, "result %+v", r)
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome, "one meaning, one errors.Is")
	assert.False(t, r.Succeeded)
	assert.Equal(t, int64(5), r.Pre)
	assert.Equal(t, int64(6), r.Post)
	assert.Equal(t, 1, r.Stats.OptimisticTries, "an unknown outcome is not tried again")
}
