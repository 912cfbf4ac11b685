package retry

import (
	"sync"
	"time"
)

// fakeClock is a backoff.Clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeTimer is a backoff.Timer that fires at once, records every sleep it
// was asked for and, if it has a clock, advances that clock by the sleep.
type fakeTimer struct {
	clock   *fakeClock
	onStart func() // called after a sleep is recorded, before the timer fires
	mu      sync.Mutex
	sleeps  []time.Duration
	stopped bool
	c       chan time.Time
}

func newFakeTimer(clock *fakeClock) *fakeTimer {
	return &fakeTimer{clock: clock, c: make(chan time.Time, 1)}
}

func (t *fakeTimer) Start(d time.Duration) {
	t.mu.Lock()
	t.sleeps = append(t.sleeps, d)
	t.mu.Unlock()
	if t.clock != nil {
		t.clock.Advance(d)
	}
	if t.onStart != nil {
		t.onStart()
	}
	t.c <- time.Time{}
}

func (t *fakeTimer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Sleeps() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]time.Duration(nil), t.sleeps...)
}

func (t *fakeTimer) Stopped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopped
}

// neverTimer is a backoff.Timer that never fires. It reports each sleep it
// is asked for on started.
type neverTimer struct {
	started chan time.Duration
	c       chan time.Time
}

func newNeverTimer() *neverTimer {
	return &neverTimer{started: make(chan time.Duration, 16), c: make(chan time.Time)}
}

func (t *neverTimer) Start(d time.Duration) { t.started <- d }
func (t *neverTimer) Stop()                 {}
func (t *neverTimer) C() <-chan time.Time   { return t.c }

// maxRand returns the largest number allowed, n-1.
func maxRand(n int) int { return n - 1 }

// zeroRand returns the smallest number allowed, 0.
func zeroRand(int) int { return 0 }
