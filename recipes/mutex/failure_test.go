package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// fRetry retries quickly and a bounded number of times, for tests.
func fRetry(t testing.TB) retry.Policy {
	t.Helper()
	p, err := retry.NewBoundedExponentialBackoff(20*time.Millisecond, 200*time.Millisecond, 10)
	require.NoError(t, err)
	return p
}

// fnewClient connects a client (session 4 s unless opts say otherwise) and closes it at
// cleanup.
func fnewClient(t testing.TB, connect string, opts ...framework.Option) *framework.Client {
	t.Helper()
	all := append([]framework.Option{
		framework.WithSessionTimeout(4 * time.Second),
		framework.WithConnectionTimeout(3 * time.Second),
		framework.WithRetryPolicy(fRetry(t)),
	}, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Connect(ctx, connect, all...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func fnewMutex(t testing.TB, c *framework.Client, path string, opts ...mutex.Option) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path, opts...)
	require.NoError(t, err)
	return m
}

// fctx returns a context that ends after d or at the test's end.
func fctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func fisClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// fwaitClosed fails the test unless ch is closed within d.
func fwaitClosed(t testing.TB, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not closed after %v", what, d)
	}
}

// fchildren lists path's children straight from the server(s) at connect.
func fchildren(t testing.TB, connect, path string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kids, err := zktest.Children(ctx, connect, path)
	require.NoError(t, err)
	return kids
}

// fassertNoChildren waits for the clients' guaranteed deletes, then checks that nothing
// is left under path.
func fassertNoChildren(t testing.TB, connect, path string, clients ...*framework.Client) {
	t.Helper()
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		require.NoError(t, c.WaitGuaranteedDeletes(ctx))
		cancel()
	}
	empty := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kids, err := zktest.Children(ctx, connect, path)
		return err == nil && len(kids) == 0
	}
	if !assert.Eventually(t, empty, 10*time.Second, 50*time.Millisecond) {
		require.Empty(t, fchildren(t, connect, path), "children left under %s", path)
	}
}

type fresult struct {
	l   *mutex.Lease
	err error
}

// fgoAcquire acquires m on a goroutine and reports on the returned channel.
func fgoAcquire(ctx context.Context, m *mutex.Mutex) <-chan fresult {
	ch := make(chan fresult, 1)
	go func() {
		l, err := m.Acquire(ctx)
		ch <- fresult{l, err}
	}()
	return ch
}

// fwaitParticipants waits until m has n participants and returns them.
func fwaitParticipants(t testing.TB, m *mutex.Mutex, n int) []string {
	t.Helper()
	var parts []string
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p, err := m.Participants(ctx)
		parts = p
		return err == nil && len(p) == n
	}, 15*time.Second, 20*time.Millisecond, "waiting for %d participants", n)
	return parts
}

// fstates records the client's connection states on a channel.
func fstates(c *framework.Client) <-chan framework.State {
	ch := make(chan framework.State, 64)
	c.AddListener(func(s framework.State) {
		select {
		case ch <- s:
		default:
		}
	})
	return ch
}

func fwaitState(t testing.TB, ch <-chan framework.State, want framework.State, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case s := <-ch:
			if s == want {
				return
			}
		case <-timeout:
			t.Fatalf("state %v not reported within %v", want, d)
		}
	}
}

func TestHolderSessionExpires(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := fnewClient(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	cb := fnewClient(t, srv.ConnectString())
	const path = "/failure/expire"
	ma, mb := fnewMutex(t, ca, path), fnewMutex(t, cb, path)
	ctx := fctx(t, 60*time.Second)

	la, err := ma.Acquire(ctx)
	tokenA := token(la) // read while A still holds it
	require.NoError(t, err)
	sidA := ca.SessionID()
	bres := fgoAcquire(ctx, mb)
	fwaitParticipants(t, mb, 2)

	proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sidA]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire A's session")

	fwaitClosed(t, la.Done(), 10*time.Second, "A's lease.Done after its session expired")
	var lb *mutex.Lease
	select {
	case r := <-bres:
		require.NoError(t, r.err)
		lb = r.l
	case <-time.After(15 * time.Second):
		t.Fatal("B did not get the lock after A's session expired")
	}
	require.Greater(t, tokenA, int64(0))
	require.Greater(t, token(lb), tokenA, "fencing token must increase")

	proxy.Heal()
	err = la.Release(ctx)
	require.ErrorIs(t, err, mutex.ErrLeaseLost)
	st, err := cb.Exists(ctx, lb.Node())
	require.NoError(t, err)
	require.NotNil(t, st, "A's Release deleted B's node")
	require.Equal(t, []string{framework.NodeName(lb.Node())}, fchildren(t, srv.ConnectString(), path))

	require.NoError(t, lb.Release(ctx))
	fassertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

func TestGhostNodeOnCreate(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := fnewClient(t, proxy.ConnectString())
	const path = "/failure/ghost"
	m := fnewMutex(t, c, path)
	ctx := fctx(t, 60*time.Second)

	// The parent exists, so the next create through the proxy is the lock node's.
	require.NoError(t, c.EnsurePath(ctx, path))
	sid := c.SessionID()
	proxy.DropNextCreateReply()
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, sid, c.SessionID(), "the session should survive a dropped connection")

	kids := fchildren(t, srv.ConnectString(), path)
	require.Equal(t, []string{framework.NodeName(l.Node())}, kids, "exactly our node, no ghost")
	st, err := c.Exists(ctx, l.Node())
	require.NoError(t, err)
	require.NotNil(t, st)
	require.Equal(t, sid, st.EphemeralOwner)

	require.NoError(t, l.Release(ctx))
	fassertNoChildren(t, srv.ConnectString(), path, c)

	l2, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.Len(t, fchildren(t, srv.ConnectString(), path), 1)
	require.NoError(t, l2.Release(ctx))
	fassertNoChildren(t, srv.ConnectString(), path, c)
}

func TestCancelWhileWaiting(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ca, cb := fnewClient(t, srv.ConnectString()), fnewClient(t, srv.ConnectString())
	const path = "/failure/cancel"
	ma, mb := fnewMutex(t, ca, path), fnewMutex(t, cb, path)
	ctx := fctx(t, 60*time.Second)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)

	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	lb, err := mb.Acquire(dctx)
	cancel()
	require.Nil(t, lb)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, cb.WaitGuaranteedDeletes(ctx))
	require.Equal(t, []string{framework.NodeName(la.Node())}, fchildren(t, srv.ConnectString(), path),
		"B's node must be gone after the deadline")

	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	start = time.Now()
	lb, err = mb.Acquire(cctx)
	require.Nil(t, lb)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), time.Second, "a cancelled context must return promptly")
	require.NoError(t, cb.WaitGuaranteedDeletes(ctx))
	require.Equal(t, []string{framework.NodeName(la.Node())}, fchildren(t, srv.ConnectString(), path))

	require.NoError(t, la.Release(ctx))
	fassertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

func TestLeaderKilledWhileContended(t *testing.T) {
	leakcheck.Check(t)
	e := zktest.NewEnsemble(t, 3)
	const (
		path       = "/failure/leader"
		nClients   = 3
		perClient  = 3
		iterations = 10
	)
	ctx := fctx(t, 90*time.Second)
	var clients []*framework.Client
	for range nClients {
		clients = append(clients, fnewClient(t, e.ConnectString()))
	}

	var (
		mu         sync.Mutex
		holders    = map[int]<-chan struct{}{} // worker -> its lease's Done
		violations atomic.Int64
		acquired   atomic.Int64
		lostLeases atomic.Int64
		halfway    = make(chan struct{})
		halfOnce   sync.Once
	)
	worker := func(m *mutex.Mutex, id int) error {
		for i := range iterations {
			var l *mutex.Lease
			for try := 0; ; try++ {
				actx, cancel := context.WithTimeout(ctx, 20*time.Second)
				var err error
				l, err = m.Acquire(actx)
				cancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil || try >= 5 {
					return fmt.Errorf("worker %d, iteration %d, try %d: %w", id, i, try, err)
				}
			}
			mu.Lock()
			if !fisClosed(l.Done()) {
				for other, done := range holders {
					if !fisClosed(done) {
						violations.Add(1)
						t.Logf("violation: worker %d got the lock while worker %d holds a live lease", id, other)
					}
				}
			}
			holders[id] = l.Done()
			mu.Unlock()
			select {
			case <-time.After(2 * time.Millisecond):
			case <-l.Done():
			}
			if fisClosed(l.Done()) {
				lostLeases.Add(1)
			}
			mu.Lock()
			delete(holders, id)
			mu.Unlock()
			if acquired.Add(1) == nClients*perClient*iterations/3 {
				halfOnce.Do(func() { close(halfway) })
			}
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			err := l.Release(rctx)
			cancel()
			if err != nil && !errors.Is(err, mutex.ErrLeaseLost) {
				// The delete is guaranteed: the node goes in the background.
				t.Logf("worker %d, iteration %d: release: %v", id, i, err)
			}
		}
		return nil
	}

	errs := make(chan error, nClients*perClient)
	for ci, c := range clients {
		m := fnewMutex(t, c, path)
		for g := range perClient {
			go func() { errs <- worker(m, ci*perClient+g) }()
		}
	}

	select {
	case <-halfway:
	case <-time.After(40 * time.Second):
		t.Fatal("the workers did not get halfway")
	}
	killed, err := e.KillLeader()
	require.NoError(t, err)
	t.Logf("killed leader %d after %d acquisitions", killed, acquired.Load())

	for range nClients * perClient {
		select {
		case err := <-errs:
			require.NoError(t, err)
		case <-ctx.Done():
			t.Fatal("workers did not finish")
		}
	}
	require.EqualValues(t, nClients*perClient*iterations, acquired.Load())
	require.Zero(t, violations.Load(), "two holders with live leases at once")
	t.Logf("leases lost (Done) during the critical section: %d", lostLeases.Load())

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = e.WaitLeader(wctx)
	require.NoError(t, err)
	fassertNoChildren(t, e.ConnectString(), path, clients...)
}

func TestNodeVanishesWhileWaiting(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ca, cb := fnewClient(t, srv.ConnectString()), fnewClient(t, srv.ConnectString())
	const path = "/failure/vanish"
	ma, mb := fnewMutex(t, ca, path), fnewMutex(t, cb, path)
	ctx := fctx(t, 60*time.Second)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	bres := fgoAcquire(ctx, mb)
	parts := fwaitParticipants(t, ma, 2)
	require.Equal(t, la.Node(), parts[0])

	conn, err := zktest.Dial(ctx, srv.ConnectString(), 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.Delete(parts[1], -1))

	// While A holds, B must not come back with a lease.
	var early *fresult
	select {
	case r := <-bres:
		early = &r
	case <-time.After(time.Second):
	}
	if early != nil {
		require.Nil(t, early.l, "B acquired while A holds the lock")
		require.ErrorIs(t, early.err, mutex.ErrNodeVanished)
	}
	require.False(t, fisClosed(la.Done()))
	parts, err = ma.Participants(ctx)
	require.NoError(t, err)
	require.Equal(t, la.Node(), parts[0], "A must still be first")

	require.NoError(t, la.Release(ctx))
	if early == nil {
		select {
		case r := <-bres:
			if r.err != nil {
				require.ErrorIs(t, r.err, mutex.ErrNodeVanished)
			} else {
				require.NoError(t, r.l.Release(ctx))
			}
		case <-time.After(15 * time.Second):
			t.Fatal("B neither got the lock nor failed after A released")
		}
	}
	fassertNoChildren(t, srv.ConnectString(), path, ca, cb)
}

func TestSuspendedEndsLeaseStandardPolicy(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := fnewClient(t, proxy.ConnectString())
	states := fstates(c)
	const path = "/failure/suspended-standard"
	m := fnewMutex(t, c, path)
	ctx := fctx(t, 60*time.Second)

	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	sid := c.SessionID()
	proxy.DropConnections()
	fwaitClosed(t, l.Done(), 10*time.Second, "lease.Done after Suspended (standard policy)")
	fwaitState(t, states, framework.Reconnected, 10*time.Second)
	require.Equal(t, sid, c.SessionID(), "the session should survive")

	// The lease may have been lost: Release says so, but still removes our node.
	require.ErrorIs(t, l.Release(ctx), mutex.ErrLeaseLost)
	st, err := c.Exists(ctx, l.Node())
	require.NoError(t, err)
	require.Nil(t, st, "Release must delete the node our session still owns")
	fassertNoChildren(t, srv.ConnectString(), path, c)
}

func TestSuspendedKeepsLeaseSessionPolicy(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := fnewClient(t, proxy.ConnectString(), framework.WithErrorPolicy(framework.SessionErrorPolicy))
	states := fstates(c)
	const path = "/failure/suspended-session"
	m := fnewMutex(t, c, path)
	ctx := fctx(t, 60*time.Second)

	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	sid := c.SessionID()
	proxy.DropConnections()
	fwaitState(t, states, framework.Suspended, 10*time.Second)
	fwaitState(t, states, framework.Reconnected, 10*time.Second)
	require.Equal(t, sid, c.SessionID(), "the session should survive")
	require.False(t, fisClosed(l.Done()), "Suspended must not end a lease under the session policy")

	require.NoError(t, l.Release(ctx))
	fassertNoChildren(t, srv.ConnectString(), path, c)
}

func TestMisuse(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := fnewClient(t, srv.ConnectString())
	ctx := fctx(t, 60*time.Second)
	const path = "/failure/misuse"

	for _, tc := range []struct {
		name string
		c    *framework.Client
		path string
	}{
		{"nil client", nil, path},
		{"empty component", c, "bad//path"},
		{"relative", c, "bad/path"},
		{"root", c, "/"},
		{"empty", c, ""},
		{"trailing slash", c, "/a/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m *mutex.Mutex
			var err error
			require.NotPanics(t, func() { m, err = mutex.New(tc.c, tc.path) })
			require.Error(t, err)
			require.Nil(t, m)
		})
	}

	m := fnewMutex(t, c, path)

	// Releasing twice.
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.ErrorIs(t, l.Release(ctx), mutex.ErrNotHeld)

	// Re-entrancy through the lease's context.
	l, err = m.Acquire(ctx)
	require.NoError(t, err)
	rctx, cancel := l.Context(ctx)
	defer cancel()
	l2, err := m.Acquire(rctx)
	require.NoError(t, err)
	require.Same(t, l, l2, "a re-entrant Acquire returns the same lease")
	require.Len(t, fchildren(t, srv.ConnectString(), path), 1, "re-entry must not create a node")
	require.NoError(t, l.Release(ctx))
	st, err := c.Exists(ctx, l.Node())
	require.NoError(t, err)
	require.NotNil(t, st, "the first of two releases must keep the node")
	require.True(t, m.IsAcquiredInThisProcess())
	require.NoError(t, l.Release(ctx))
	st, err = c.Exists(ctx, l.Node())
	require.NoError(t, err)
	require.Nil(t, st, "the last release must delete the node")
	require.False(t, m.IsAcquiredInThisProcess())
	require.ErrorIs(t, l.Release(ctx), mutex.ErrNotHeld)
	fassertNoChildren(t, srv.ConnectString(), path, c)

	// Acquire after the client is closed.
	c2 := fnewClient(t, srv.ConnectString())
	m2 := fnewMutex(t, c2, path)
	require.NoError(t, c2.Close())
	l, err = m2.Acquire(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, framework.ErrClosed)
	l, err = m2.TryAcquire(ctx)
	require.Nil(t, l)
	require.ErrorIs(t, err, framework.ErrClosed)
	fassertNoChildren(t, srv.ConnectString(), path, c)
}

// A lease whose Done closed because the connection dropped is released while the client
// is still cut off, with a short deadline; the session survives. The node must not stay
// behind held by a live session (Release's delete is guaranteed), or the lock is stuck.
func TestSuspendedReleaseLeavesNoNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := fnewClient(t, proxy.ConnectString())
	cb := fnewClient(t, srv.ConnectString())
	states := fstates(ca)
	const path = "/failure/release-disconnected"
	ma, mb := fnewMutex(t, ca, path), fnewMutex(t, cb, path)
	ctx := fctx(t, 60*time.Second)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	sid := ca.SessionID()

	proxy.Stall()           // new connections go nowhere...
	proxy.DropConnections() // ...and the current one ends now: Suspended at once
	fwaitClosed(t, la.Done(), 10*time.Second, "lease.Done after Suspended")
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = la.Release(rctx)
	cancel()
	require.ErrorIs(t, err, mutex.ErrLeaseLost)
	proxy.Heal()
	fwaitState(t, states, framework.Reconnected, 10*time.Second)
	require.Equal(t, sid, ca.SessionID(), "the session should survive the short cut")

	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	lb, err := mb.Acquire(actx)
	require.NoError(t, err, "the released lease's node still blocks the lock: %v", fchildren(t, srv.ConnectString(), path))
	require.NoError(t, lb.Release(ctx))
	fassertNoChildren(t, srv.ConnectString(), path, ca, cb)
}
