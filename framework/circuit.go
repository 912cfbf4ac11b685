package framework

import (
	"fmt"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/retry"
)

// AddCircuitBreakingListener registers fn as AddListener does, behind a circuit breaker
// (Curator's CircuitBreakingConnectionStateListener), so that a flapping network gives fn
// one Suspended and then one Reconnected or Lost, not every flip.
//
// While the circuit is closed every state is passed to fn. The first state that is not
// connected (Suspended or Lost) is passed on and opens the circuit; policy then says how
// long it stays open: retry k (from 0) sleeps what policy.AllowRetry(k, time since the
// circuit opened) says. While it is open, states are held back and only the last one is
// kept, except that the first Lost is passed on at once. When a sleep is over and the
// last state is a connected one, the circuit closes and that state goes to fn; when it is
// still not connected, policy is asked again; when policy gives up, the circuit closes
// and the last state goes to fn unless it is the one fn heard when the circuit opened
// (or the Lost it heard since). The next state that is not connected opens it again.
//
// fn is called one call at a time. The state passed on when the circuit closes is passed
// from a goroutine of the breaker (tracked as Go's are, so fn may call Close there), not
// from the goroutine that calls the other listeners. policy is called on that goroutine
// too. remove unregisters fn, stops the breaker's timer and waits until its goroutine is
// done (unless called from fn on that goroutine, where it cannot wait for itself); Close
// ends them as well. A nil fn registers nothing; a nil policy is an error matching
// ErrInvalidArgument.
func (c *Client) AddCircuitBreakingListener(policy retry.Policy, fn func(State)) (remove func(), err error) {
	if policy == nil {
		return nil, fmt.Errorf("framework: %w: circuit breaker: nil retry policy", ErrInvalidArgument)
	}
	if fn == nil {
		return func() {}, nil
	}
	b := &circuitListener{
		c:       c,
		policy:  policy,
		fn:      fn,
		sem:     make(chan struct{}, 1),
		removed: make(chan struct{}),
		gids:    map[uint64]bool{},
	}
	unregister := c.addListener(b.stateChanged)
	return func() {
		b.removeOnce.Do(func() {
			close(b.removed)
			unregister()
		})
		b.gmu.Lock()
		b.gone = true // no goroutine starts after this
		self := b.gids[goroutineID()]
		b.gmu.Unlock()
		if !self {
			b.gwg.Wait()
		}
	}, nil
}

// WithCircuitBreaking puts every state listener of the client behind a circuit breaker
// held open by policy, as AddCircuitBreakingListener does: those given to AddListener and
// WithStateListener, and so those of the recipes built on the client. It is Curator's
// ConnectionStateListenerManagerFactory.circuitBreaking. Each listener has a breaker of
// its own. Without it (the default), listeners hear every state change. A nil policy is
// an error matching ErrInvalidArgument.
func WithCircuitBreaking(policy retry.Policy) Option {
	return check(func(o *options) error {
		if policy == nil {
			return fmt.Errorf("framework: %w: circuit breaking: nil retry policy", ErrInvalidArgument)
		}
		o.circuitBreaking = policy
		return nil
	})
}

// circuitListener is the breaker behind AddCircuitBreakingListener.
type circuitListener struct {
	c          *Client
	policy     retry.Policy
	fn         func(State)
	sem        chan struct{} // held while the breaker's state changes or fn runs
	removed    chan struct{} // closed by remove
	removeOnce sync.Once

	// guarded by sem
	open     bool
	lostSent bool  // Lost was passed on while open
	initial  State // the state passed on when it opened (or the Lost passed on since)
	last     State // the last state heard

	gmu  sync.Mutex
	gids map[uint64]bool // the breaker's goroutines
	gwg  sync.WaitGroup  // the breaker's goroutines
	gone bool            // removed: start no goroutine
}

// lock takes sem, unless fn was removed or the client closed first.
func (b *circuitListener) lock() bool {
	select {
	case b.sem <- struct{}{}:
	case <-b.removed:
		return false
	case <-b.c.closing:
		return false
	}
	select {
	case <-b.removed:
	case <-b.c.closing:
	default:
		return true
	}
	<-b.sem
	return false
}

func (b *circuitListener) unlock() { <-b.sem }

// stateChanged is the listener registered with the client.
func (b *circuitListener) stateChanged(s State) {
	if !b.lock() {
		return
	}
	defer b.unlock()
	if b.open {
		b.last = s
		if s == Lost && !b.lostSent {
			b.lostSent = true
			b.initial = Lost
			b.fn(s)
		}
		return
	}
	if !s.IsConnected() {
		b.openLocked(s)
	}
	b.fn(s)
}

// openLocked opens the circuit on s and starts the goroutine that closes it.
func (b *circuitListener) openLocked(s State) {
	b.gmu.Lock()
	if b.gone {
		b.gmu.Unlock()
		return
	}
	b.gwg.Add(1)
	b.gmu.Unlock()
	start := time.Now()
	if !b.c.Go(func() { b.run(start) }) {
		b.gwg.Done() // closed: nothing more to hold back
		return
	}
	b.open, b.lostSent, b.initial, b.last = true, s == Lost, s, s
}

// run asks the policy how long the circuit stays open, sleeps, and closes the circuit
// when the connection is back or the policy gives up.
func (b *circuitListener) run(start time.Time) {
	id := goroutineID()
	b.gmu.Lock()
	b.gids[id] = true
	b.gmu.Unlock()
	defer func() {
		b.gmu.Lock()
		delete(b.gids, id)
		b.gmu.Unlock()
		b.gwg.Done()
	}()
	for retries := 0; ; retries++ {
		sleep, ok := b.policy.AllowRetry(retries, time.Since(start))
		if ok {
			t := time.NewTimer(max(sleep, 0))
			select {
			case <-t.C:
			case <-b.removed:
				t.Stop()
				return
			case <-b.c.closing:
				t.Stop()
				return
			}
		}
		if !b.lock() {
			return
		}
		if ok && !b.last.IsConnected() {
			b.unlock()
			continue
		}
		b.closeLocked()
		return
	}
}

// closeLocked closes the circuit and passes on the last state unless fn heard it when the
// circuit opened. It releases sem.
func (b *circuitListener) closeLocked() {
	defer b.unlock()
	send := b.last
	if send == b.initial {
		send = 0
	}
	b.open, b.lostSent, b.initial, b.last = false, false, 0, 0
	if send == 0 {
		return
	}
	defer LogPanic(b.c.opts.logger, "state listener panicked", "component", "framework", "state", send.String())
	b.fn(send)
}
