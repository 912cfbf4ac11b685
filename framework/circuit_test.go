package framework_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// gatePolicy is a retry policy the test answers by hand: each AllowRetry reports its
// retry count on asked and waits for the test's answer (sleep 0), so the moment the
// breaker looks at the connection again is the test's choice, not a timer's.
type gatePolicy struct {
	asked  chan int
	answer chan bool
	done   chan struct{}
}

func newGatePolicy() *gatePolicy {
	return &gatePolicy{asked: make(chan int), answer: make(chan bool), done: make(chan struct{})}
}

func (p *gatePolicy) AllowRetry(n int, _ time.Duration) (time.Duration, bool) {
	select {
	case p.asked <- n:
	case <-p.done:
		return 0, false
	}
	select {
	case ok := <-p.answer:
		return 0, ok
	case <-p.done:
		return 0, false
	}
}

// next waits for the breaker to ask for retry want and answers ok.
func (p *gatePolicy) next(t *testing.T, want int, ok bool) {
	t.Helper()
	select {
	case n := <-p.asked:
		require.Equal(t, want, n, "retry count asked")
	case <-time.After(20 * time.Second):
		t.Fatalf("the breaker did not ask for retry %d", want)
	}
	select {
	case p.answer <- ok:
	case <-time.After(20 * time.Second):
		t.Fatal("the breaker did not take the answer")
	}
}

// newRecorder returns a stateRecorder not yet registered anywhere, and its callback.
func newRecorder() (*stateRecorder, func(framework.State)) {
	r := &stateRecorder{signal: make(chan struct{}, 100)}
	return r, func(s framework.State) {
		r.mu.Lock()
		r.states = append(r.states, s)
		r.mu.Unlock()
		select {
		case r.signal <- struct{}{}:
		default:
		}
	}
}

// waitLen waits until r has recorded n states.
func (r *stateRecorder) waitLen(t *testing.T, d time.Duration, n int) {
	t.Helper()
	deadline := time.After(d)
	for len(r.get()) < n {
		select {
		case <-r.signal:
		case <-deadline:
			t.Fatalf("states %v: fewer than %d after %v", r.get(), n, d)
		}
	}
}

// circuitClient starts a client through proxy with a circuit-breaking listener (policy
// p, recorded by the first recorder) and then a plain one (the second recorder), and
// waits until both heard Connected. The caller closes it.
func circuitClient(t *testing.T, proxy *zktest.Proxy, p retry.Policy, session time.Duration) (c *framework.Client, breaking, plain *stateRecorder, remove func()) {
	t.Helper()
	c, err := framework.New(proxy.ConnectString(), framework.WithSessionTimeout(session),
		framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	breaking, fn := newRecorder()
	remove, err = c.AddCircuitBreakingListener(p, fn)
	require.NoError(t, err)
	plain = recordStates(c)
	require.NoError(t, c.Start())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntilConnected(ctx))
	plain.waitFor(t, 10*time.Second, framework.Connected)
	breaking.waitFor(t, 10*time.Second, framework.Connected)
	return c, breaking, plain, remove
}

func TestCircuitBreakerCoalescesAStorm(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	p := newGatePolicy()
	c, breaking, plain, _ := circuitClient(t, proxy, p, 4*time.Second)
	defer c.Close()
	defer close(p.done) // before Close: a breaker waiting in AllowRetry ends

	// The storm: connections dropped again and again (one cut found by the client's own
	// read timeout, through a stall), each followed by a reconnection. Each flip is
	// awaited in the plain listener, which hears every state after the breaking one.
	const flips = 6
	for i := range flips {
		if i == flips/2 {
			proxy.Stall()
			plain.waitLen(t, 20*time.Second, 2+2*i)
			proxy.Heal()
		} else {
			proxy.DropConnections()
		}
		plain.waitLen(t, 20*time.Second, 3+2*i)
		require.Equal(t, framework.Reconnected, plain.get()[2+2*i], "flip %d: %v", i, plain.get())
	}
	want := []framework.State{framework.Connected}
	for range flips {
		want = append(want, framework.Suspended, framework.Reconnected)
	}
	assert.Equal(t, want, plain.get(), "negative control: a plain listener hears every flip")
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended}, breaking.get(),
		"while the circuit is open, the flips are held back")

	p.next(t, 0, true) // the sleep is over: the connection is back, so the circuit closes
	breaking.waitLen(t, 10*time.Second, 3)
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended, framework.Reconnected}, breaking.get(),
		"one Suspended and one Reconnected for the whole storm")

	// Closed again: the next drop is passed on at once and opens it anew.
	proxy.DropConnections()
	breaking.waitLen(t, 20*time.Second, 4)
	assert.Equal(t, framework.Suspended, breaking.get()[3])
	plain.waitLen(t, 20*time.Second, 3+2*flips)
	p.next(t, 0, true)
	breaking.waitLen(t, 10*time.Second, 5)
	assert.Equal(t, framework.Reconnected, breaking.get()[4])
}

func TestCircuitBreakerSingleDrop(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	p := newGatePolicy()
	c, breaking, plain, _ := circuitClient(t, proxy, p, 4*time.Second)
	defer c.Close()
	defer close(p.done)

	proxy.DropConnections()
	plain.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Reconnected)
	p.next(t, 0, true)
	breaking.waitLen(t, 10*time.Second, 3)
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended, framework.Reconnected}, breaking.get())
}

func TestCircuitBreakerRetriesWhileDisconnected(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	p := newGatePolicy()
	c, breaking, plain, _ := circuitClient(t, proxy, p, 10*time.Second)
	defer c.Close()
	defer close(p.done)

	proxy.Stall()
	plain.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended)
	p.next(t, 0, true) // still suspended: the breaker asks the policy again
	p.next(t, 1, true)
	p.next(t, 2, true)
	proxy.Heal()
	plain.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Reconnected)
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended}, breaking.get())
	p.next(t, 3, true)
	breaking.waitLen(t, 10*time.Second, 3)
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended, framework.Reconnected}, breaking.get())
}

func TestCircuitBreakerGivesUp(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	p := newGatePolicy()
	c, breaking, plain, _ := circuitClient(t, proxy, p, 10*time.Second)
	defer c.Close()
	defer close(p.done)

	proxy.Stall()
	plain.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended)
	// The policy gives up while the client is still suspended: the circuit closes and,
	// the state being the one that opened it, passes nothing on.
	p.next(t, 0, false)
	proxy.Heal()
	plain.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Reconnected)
	// Reconnected is passed on once, whether it came before the circuit closed (then the
	// closing passes it on) or after (then it passes through).
	breaking.waitLen(t, 10*time.Second, 3)
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended, framework.Reconnected}, breaking.get())
}

func TestCircuitBreakerPassesLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	p := newGatePolicy()
	c, breaking, plain, _ := circuitClient(t, proxy, p, 2*time.Second)
	defer c.Close()
	defer close(p.done)

	proxy.Stall()
	plain.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Lost)
	// The circuit is open (the policy has not answered), yet Lost is passed on at once.
	breaking.waitFor(t, 10*time.Second, framework.Connected, framework.Suspended, framework.Lost)
	proxy.Heal()
	plain.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Lost, framework.Reconnected)
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended, framework.Lost}, breaking.get())
	p.next(t, 0, true)
	breaking.waitLen(t, 10*time.Second, 4)
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended, framework.Lost, framework.Reconnected}, breaking.get())
}

// breakerGoroutines counts the goroutines of circuit breakers.
func breakerGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "framework.(*circuitListener).run(")
}

func TestCircuitBreakerRemoveAndCloseEndIt(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	hour, err := retry.NewForever(time.Hour)
	require.NoError(t, err)

	// Removed while open (its timer set for an hour): its goroutine ends before remove
	// returns, and it hears nothing more.
	c, breaking, plain, remove := circuitClient(t, proxy, hour, 4*time.Second)
	proxy.DropConnections()
	plain.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Reconnected)
	require.Equal(t, 1, breakerGoroutines(), "the circuit is open")
	remove()
	// remove has waited for the breaker; its goroutine is returning.
	require.Eventually(t, func() bool { return breakerGoroutines() == 0 }, 5*time.Second, 10*time.Millisecond, "remove ends the breaker")
	remove() // idempotent
	proxy.DropConnections()
	plain.waitFor(t, 20*time.Second, framework.Suspended, framework.Reconnected, framework.Suspended, framework.Reconnected)
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended}, breaking.get())
	require.NoError(t, c.Close())

	// Closed while open: Close ends the breaker (leakcheck checks the rest).
	c, _, plain, _ = circuitClient(t, proxy, hour, 4*time.Second)
	proxy.DropConnections()
	plain.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Reconnected)
	require.Equal(t, 1, breakerGoroutines(), "the circuit is open")
	require.NoError(t, c.Close())
	assert.Equal(t, 0, breakerGoroutines(), "Close ends the breaker")
}

func TestCircuitBreakerListenerMayClose(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	p := newGatePolicy()
	c, err := framework.New(proxy.ConnectString(), framework.WithSessionTimeout(4*time.Second),
		framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	defer c.Close()
	defer close(p.done)
	var once sync.Once
	closed := make(chan struct{})
	// The listener closes the client from the breaker's own goroutine, when the circuit
	// closes: Close must not wait for that goroutine.
	_, err = c.AddCircuitBreakingListener(p, func(s framework.State) {
		if s == framework.Reconnected {
			once.Do(func() { _ = c.Close(); close(closed) })
		}
	})
	require.NoError(t, err)
	plain := recordStates(c)
	require.NoError(t, c.Start())
	plain.waitFor(t, 20*time.Second, framework.Connected)
	proxy.DropConnections()
	plain.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Reconnected)
	p.next(t, 0, true)
	testutil.WaitClosed(t, closed, 20*time.Second, "Close called from the breaking listener")
}

func TestCircuitBreakerRejectsNilPolicy(t *testing.T) {
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	defer c.Close()
	_, err = c.AddCircuitBreakingListener(nil, func(framework.State) {})
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	remove, err := c.AddCircuitBreakingListener(retry.Default(), nil)
	require.NoError(t, err)
	remove()
}

func TestCircuitBreakingOptionCoversEveryListener(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	p := newGatePolicy()
	breaking, fn := newRecorder()
	c, err := framework.New(proxy.ConnectString(), framework.WithSessionTimeout(4*time.Second),
		framework.WithRetryPolicy(testutil.FastRetry(t)), framework.WithCircuitBreaking(p),
		framework.WithStateListener(fn))
	require.NoError(t, err)
	defer c.Close()
	defer close(p.done)
	plain, plainFn := newRecorder()
	framework.AddListenerUnbroken(c, plainFn)
	require.NoError(t, c.Start())
	plain.waitFor(t, 20*time.Second, framework.Connected)
	const flips = 3
	for i := range flips {
		proxy.DropConnections()
		plain.waitLen(t, 20*time.Second, 3+2*i)
		require.Equal(t, framework.Reconnected, plain.get()[2+2*i], "flip %d: %v", i, plain.get())
	}
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended}, breaking.get(),
		"a listener given to WithStateListener is behind the breaker")
	p.next(t, 0, true)
	breaking.waitLen(t, 10*time.Second, 3)
	assert.Equal(t, []framework.State{framework.Connected, framework.Suspended, framework.Reconnected}, breaking.get())
	_, err = framework.New("127.0.0.1:1", framework.WithCircuitBreaking(nil))
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
}
