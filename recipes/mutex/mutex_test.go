package mutex_test

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

var nodeName = regexp.MustCompile(`^/locks/orders/_c_[0-9a-f-]{36}-lock-\d{10}$`)

// Many goroutines over several clients: never two holders, FIFO hand-over, nothing left.
func TestMutualExclusionManyClients(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	const clients, perClient, rounds = 3, 4, 8
	var holders, violations, total atomic.Int64
	var lastToken atomic.Int64
	var tokenErrs atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients*perClient)
	for i := 0; i < clients; i++ {
		c := testutil.Connect(t, srv.ConnectString())
		for g := 0; g < perClient; g++ {
			m, err := mutex.New(c, "/locks/orders")
			require.NoError(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				for r := 0; r < rounds; r++ {
					lease, err := m.Acquire(ctx)
					if err != nil {
						errs <- err
						return
					}
					if holders.Add(1) > 1 {
						violations.Add(1)
					}
					if !nodeName.MatchString(lease.Node()) {
						errs <- fmt.Errorf("node name %q", lease.Node())
					}
					if tok := testutil.Token(lease); lastToken.Swap(tok) >= tok {
						tokenErrs.Add(1)
					}
					total.Add(1)
					holders.Add(-1)
					if err := lease.Release(ctx); err != nil {
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
	assert.Zero(t, violations.Load(), "two holders at once")
	assert.Zero(t, tokenErrs.Load(), "fencing tokens must strictly increase from holder to holder")
	assert.EqualValues(t, clients*perClient*rounds, total.Load())
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/orders")
}

// Waiters get the lock in the order they queued.
func TestFIFO(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := mutex.New(c, "/locks/fifo")
	require.NoError(t, err)
	first, err := m.Acquire(ctx)
	require.NoError(t, err)
	order := make(chan int, 5)
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own, err := mutex.New(c, "/locks/fifo") // its own value: it queues in ZooKeeper
			if err != nil {
				order <- -1
				return
			}
			l, err := own.Acquire(ctx)
			if err != nil {
				order <- -1
				return
			}
			order <- i
			_ = l.Release(ctx)
		}()
		// Wait until this waiter's node is queued before starting the next.
		require.Eventually(t, func() bool {
			p, err := m.Participants(ctx)
			return err == nil && len(p) == i+2
		}, 10*time.Second, 10*time.Millisecond)
	}
	p, err := m.Participants(ctx)
	require.NoError(t, err)
	assert.Equal(t, first.Node(), p[0], "the holder is the first participant")
	assert.True(t, m.IsAcquiredInThisProcess())
	require.NoError(t, first.Release(ctx))
	wg.Wait()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4}, got)
	assert.False(t, m.IsAcquiredInThisProcess())
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/fifo")
}

// Goroutines sharing one Mutex value queue in-process: one node at a time, FIFO, and the
// node is handed over while no other process waits.
func TestLocalQueueHandsOver(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := mutex.New(c, "/locks/local")
	require.NoError(t, err)
	first, err := m.Acquire(ctx)
	require.NoError(t, err)
	type got struct {
		i     int
		node  string
		token int64
	}
	results := make(chan got, 4)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := m.Acquire(ctx)
			if err != nil {
				results <- got{i: -1}
				return
			}
			results <- got{i, l.Node(), testutil.Token(l)}
			_ = l.Release(ctx)
		}()
		// Wait until this goroutine is queued before starting the next: FIFO is then known.
		require.Eventually(t, func() bool { return m.LocalWaiters() == i+1 }, 10*time.Second, time.Millisecond)
	}
	kids, err := zktest.Children(ctx, srv.ConnectString(), "/locks/local")
	require.NoError(t, err)
	assert.Len(t, kids, 1, "local waiters hold no node in ZooKeeper")
	require.NoError(t, first.Release(ctx))
	wg.Wait()
	close(results)
	prev := testutil.Token(first)
	var order []int
	for r := range results {
		order = append(order, r.i)
		assert.Equal(t, first.Node(), r.node, "handed over without a new node")
		assert.Greater(t, r.token, prev, "tokens strictly increase through hand-overs")
		prev = r.token
	}
	assert.Equal(t, []int{0, 1, 2, 3}, order)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/local")
}

// With the default (fair) setting, a waiting process goes before the holder's local
// waiters.
func TestLocalQueueStaysFair(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := mutex.New(testutil.Connect(t, srv.ConnectString()), "/locks/fair")
	require.NoError(t, err)
	b, err := mutex.New(testutil.Connect(t, srv.ConnectString()), "/locks/fair")
	require.NoError(t, err)
	held, err := a.Acquire(ctx)
	require.NoError(t, err)
	order := make(chan string, 2)
	go func() {
		l, err := b.Acquire(ctx)
		if err == nil {
			order <- "other process"
			_ = l.Release(ctx)
		}
	}()
	require.Eventually(t, func() bool {
		p, err := a.Participants(ctx)
		return err == nil && len(p) == 2
	}, 10*time.Second, 10*time.Millisecond)
	go func() {
		l, err := a.Acquire(ctx)
		if err == nil {
			order <- "local waiter"
			_ = l.Release(ctx)
		}
	}()
	require.Eventually(t, func() bool { return a.LocalWaiters() == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, held.Release(ctx))
	assert.Equal(t, "other process", <-order)
	assert.Equal(t, "local waiter", <-order)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/fair")
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/fifo")
}

func TestTryAcquire(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	a, err := mutex.New(testutil.Connect(t, srv.ConnectString()), "/locks/try")
	require.NoError(t, err)
	b, err := mutex.New(testutil.Connect(t, srv.ConnectString()), "/locks/try")
	require.NoError(t, err)
	la, err := a.TryAcquire(ctx)
	require.NoError(t, err)
	_, err = b.TryAcquire(ctx)
	assert.ErrorIs(t, err, mutex.ErrLocked)
	kids, err := zktest.Children(ctx, srv.ConnectString(), "/locks/try")
	require.NoError(t, err)
	assert.Len(t, kids, 1, "a failed try leaves no node")
	require.NoError(t, la.Release(ctx))
	lb, err := b.TryAcquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lb.Release(ctx))
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/try")
}

// TestNoReentrancyThroughContext: a context carrying a live lease does not re-enter; it
// fails at once with ErrAlreadyHeld, with no round trip. Without the lease's context,
// another acquisition contends like another process.
func TestNoReentrancyThroughContext(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	m, err := mutex.New(c, "/locks/re")
	require.NoError(t, err)
	ctx := context.Background()
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	lctx, cancel := lease.Context(ctx)
	defer cancel()
	before := c.Requests()
	_, err = m.Acquire(lctx)
	assert.ErrorIs(t, err, mutex.ErrAlreadyHeld)
	assert.Equal(t, before, c.Requests(), "the refusal costs no round trip")
	tctx, tcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = m.Acquire(tctx)
	tcancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, lease.Release(ctx))
	testutil.WaitClosed(t, lease.Done(), 5*time.Second, "Done on the release")
	testutil.WaitClosed(t, lctx.Done(), 5*time.Second, "the lease's context when the lease ends")
	assert.ErrorIs(t, lease.Release(ctx), mutex.ErrNotHeld)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/re")
}

// WithLocalBatch(3): the holder serves two more of its own goroutines before a waiting
// process gets in.
func TestLocalBatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := mutex.New(testutil.Connect(t, srv.ConnectString()), "/locks/batch", mutex.WithLocalBatch(3))
	require.NoError(t, err)
	b, err := mutex.New(testutil.Connect(t, srv.ConnectString()), "/locks/batch")
	require.NoError(t, err)
	held, err := a.Acquire(ctx)
	require.NoError(t, err)
	order := make(chan string, 5)
	go func() {
		l, err := b.Acquire(ctx)
		if err == nil {
			order <- "B"
			_ = l.Release(ctx)
		}
	}()
	require.Eventually(t, func() bool {
		p, err := a.Participants(ctx)
		return err == nil && len(p) == 2
	}, 10*time.Second, 10*time.Millisecond)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := a.Acquire(ctx)
			if err == nil {
				order <- "A"
				_ = l.Release(ctx)
			}
		}()
	}
	require.Eventually(t, func() bool { return a.LocalWaiters() == 4 }, 10*time.Second, time.Millisecond)
	require.NoError(t, held.Release(ctx))
	wg.Wait()
	var got []string
	for len(got) < 5 {
		got = append(got, <-order)
	}
	assert.Equal(t, []string{"A", "A", "B", "A", "A"}, got, "two local hand-overs (a batch of 3 with the first holder), then the waiting process")
	_, err = mutex.New(testutil.Connect(t, srv.ConnectString()), "/locks/batch", mutex.WithLocalBatch(0))
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/batch")
}

// A child of the lock path without the lock name ("0", which sorts before every sequence
// number) is no contender: REFERENCE.md, Lock internals: "a child without the lock name
// sorts by its whole name (and is otherwise ignored by the predicate)". With nobody else
// holding the lock, Acquire gets it.
func TestAcquireIgnoresChildWithoutLockName(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/locks/foreign"
	_, err := c.Create(ctx, path+"/0", []byte("an operator's note"), framework.WithParents())
	require.NoError(t, err)
	m := newMutex(t, c, path)
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := m.Acquire(actx)
	require.NoError(t, err, "nobody holds %s; its only other child is %s/0, without the lock name", path, path)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, c.Delete(ctx, "/locks", framework.WithChildren()))
}
