package framework

import (
	"context"
	"sync"
	"sync/atomic"
)

// InFlight counts the create requests handed to it (WithInFlight) that are not answered
// yet, those whose caller stopped waiting for them included. A caller that gave a create
// up (its context ended) and must know whether the create was applied waits with Wait
// before it looks: ZooKeeper answers one session's requests in order, so a request sent
// after Wait returned cannot overtake the create. Without it, a look sent at once may be
// handed to the connection before the create it is about, find nothing, and the create
// then be applied after all. The zero value is ready to use; an InFlight must not be
// copied once used.
type InFlight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while n is 0
}

// WithInFlight counts each create request this Create hands to the connection in f, until
// it is answered or fails (the connection lost, the client closed).
func WithInFlight(f *InFlight) CreateOption { return func(o *createOpts) { o.inflight = f } }

func (f *InFlight) add() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.zero = make(chan struct{})
	}
	f.n++
}

func (f *InFlight) done() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 {
		close(f.zero)
		f.zero = nil
	}
}

// Pending reports whether a request counted in f is not answered yet.
func (f *InFlight) Pending() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n > 0
}

// Wait waits until every request counted in f was answered or failed, or ctx ends (then
// it returns ctx's error).
func (f *InFlight) Wait(ctx context.Context) error {
	f.mu.Lock()
	zero := f.zero
	f.mu.Unlock()
	if zero == nil {
		return nil
	}
	select {
	case <-zero:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flight is one create request counted in an InFlight: finish uncounts it once, whether
// its goroutine answered or the client closed before it ran.
type flight struct {
	f    *InFlight
	ran  atomic.Bool
	once sync.Once
}

func (fl *flight) finish() { fl.once.Do(fl.f.done) }
