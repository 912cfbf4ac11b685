package framework

import (
	"bytes"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
)

// callbacks tracks the goroutines that run user code (the state listener loop and the
// functions given to Go), so that Close called from one of them does not wait for itself,
// while Close from anywhere else still waits for all of them.
type callbacks struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending int             // spawned, not yet registered
	running map[uint64]int  // goroutine id -> callback goroutines it runs (1)
	closing map[uint64]bool // callback goroutines waiting in Close
}

func newCallbacks() *callbacks {
	cb := &callbacks{running: map[uint64]int{}, closing: map[uint64]bool{}}
	cb.cond = sync.NewCond(&cb.mu)
	return cb
}

// spawn runs fn on a new tracked goroutine. The caller has checked the client is open.
func (cb *callbacks) spawn(fn func()) {
	cb.mu.Lock()
	cb.pending++
	cb.mu.Unlock()
	go func() {
		id := goroutineID()
		cb.mu.Lock()
		cb.pending--
		cb.running[id]++
		cb.mu.Unlock()
		defer func() {
			cb.mu.Lock()
			if cb.running[id]--; cb.running[id] == 0 {
				delete(cb.running, id)
			}
			cb.cond.Broadcast()
			cb.mu.Unlock()
		}()
		fn()
	}()
}

// wait waits until every tracked goroutine has ended. Called from a tracked goroutine it
// does not wait for those (itself among them) that are themselves waiting in Close.
func (cb *callbacks) wait() {
	id := goroutineID()
	cb.mu.Lock()
	defer cb.mu.Unlock()
	inside := cb.running[id] > 0
	if inside {
		cb.closing[id] = true
		cb.cond.Broadcast()
		defer func() {
			delete(cb.closing, id)
			cb.cond.Broadcast()
		}()
	}
	for !cb.doneLocked(inside) {
		cb.cond.Wait()
	}
}

func (cb *callbacks) doneLocked(inside bool) bool {
	if cb.pending > 0 || (!inside && len(cb.running) > 0) {
		return false
	}
	for id := range cb.running {
		if !cb.closing[id] {
			return false
		}
	}
	return true
}

// goroutineID returns the current goroutine's id, read from its stack header
// ("goroutine 123 [running]:"). Only Close and the start of a callback goroutine use it.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// inside reports whether the caller runs on one of the tracked goroutines.
func (cb *callbacks) inside() bool {
	id := goroutineID()
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.running[id] > 0
}

// Goroutines runs goroutines whose code may close what started them, for recipes built on
// the framework: a listener that calls its recipe's Close, a leader's function that closes
// its selector. Close must wait for such goroutines when called from elsewhere and must
// not wait for the one it runs on; Inside tells which case it is. It is what the client
// uses for its own listener and Go goroutines.
type Goroutines struct{ cb *callbacks }

// NewGoroutines returns an empty set of tracked goroutines.
func NewGoroutines() *Goroutines { return &Goroutines{cb: newCallbacks()} }

// Go runs fn on a new tracked goroutine.
func (g *Goroutines) Go(fn func()) { g.cb.spawn(fn) }

// Inside reports whether the caller runs on one of g's goroutines.
func (g *Goroutines) Inside() bool { return g.cb.inside() }

// LogPanic, deferred where the library calls user code (a listener, a revocation
// listener), stops a panic of that code and logs it at Error on logger, with msg, attrs,
// the panic value and its stack: the library goes on, and so does the process. It must
// be deferred itself (defer framework.LogPanic(logger, "listener panicked", ...)); called
// from within another deferred function it recovers nothing.
func LogPanic(logger *slog.Logger, msg string, attrs ...any) {
	if r := recover(); r != nil {
		logger.Error(msg, slices.Concat(attrs, []any{"panic", r, "stack", string(debug.Stack())})...)
	}
}
