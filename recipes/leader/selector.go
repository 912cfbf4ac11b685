package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
	"github.com/zoocurator/zoocurator/recipes/mutex"
)

// lockName is the marker in a selector's node names: Curator's LeaderSelector is an
// InterProcessMutex on the leader path.
const lockName = "lock-"

// SelectorOption configures a Selector.
type SelectorOption func(*selectorOptions)

type selectorOptions struct {
	autoRequeue bool
	onRevoke    func(*Selector)
}

// AutoRequeue makes the selector queue again each time its leadership ends, so that it
// stays in the election until Close (Curator's autoRequeue). The default is off: the
// selector leads once per Start or Requeue.
func AutoRequeue() SelectorOption { return func(o *selectorOptions) { o.autoRequeue = true } }

// WithSelectorRevocationListener makes the selector's leadership revocable (CURATOR-171),
// as a revocable mutex is: fn is called with the selector (on a goroutine of its own)
// when, while it leads, someone asks it to let go by writing __REVOKE__ into its node
// (Revoke, `zkcurator lock revoke`, Curator's Revoker.attemptRevoke). Letting go is up to
// fn: Interrupt cancels the leadership function's context, and leadership ends when it
// returns. A panic in fn is logged (at Error, on the client's logger). The default is not
// revocable (the request is ignored).
func WithSelectorRevocationListener(fn func(*Selector)) SelectorOption {
	return func(o *selectorOptions) { o.onRevoke = fn }
}

// Selector is Curator's LeaderSelector: it queues for leadership of a path and, when its
// turn comes, runs a function; leadership lasts as long as the function runs. It is safe
// for concurrent use.
type Selector struct {
	client *framework.Client
	path   string
	id     string
	fn     func(ctx context.Context) error
	opts   selectorOptions
	m      *mutex.Mutex

	runner *framework.Goroutines // runs the selector goroutine (Close from fn)

	mu        sync.Mutex
	state     int
	queued    bool // queued, leading, or giving leadership up
	term      bool // holding the lock: from Acquire until the run loop decides what is next
	again     bool // Requeue during a term: queue again once it ends
	leading   bool
	leaseDone <-chan struct{}
	interrupt context.CancelFunc
	requeue   chan struct{}
	cancel    context.CancelFunc
	runDone   chan struct{}
	// givenUp: an acquisition was given up by Close (its create perhaps applied, its
	// answer not yet come): the framework deletes what it made in the background, and
	// Close waits for that.
	givenUp bool
	// releaseErr: the release of the term Close ended (or that ended while Close
	// waited) failed or got no answer; its delete goes on in the background, and Close
	// returns this.
	releaseErr error
}

// NewSelector returns a selector for participant id on path that runs fn while leader.
// It checks its arguments (a nil client, an invalid path, an empty id, a nil fn) but does
// not talk to ZooKeeper: call Start.
//
// fn gets a context that is cancelled when leadership may be lost (the lock lease ends:
// on Suspended or Lost under the client's standard error policy, on Lost only under the
// session policy, always when the session changes, and when someone else deletes the
// selector's lock node, as the next in line then leads), on Interrupt and on Close. fn must
// return soon after: leadership is given up (the node deleted) only when it returns.
// Its error is logged at warning level through the client's logger and otherwise ignored;
// a panic in fn is recovered, logged at error level, and ends leadership.
func NewSelector(c *framework.Client, path, id string, fn func(ctx context.Context) error, opts ...SelectorOption) (*Selector, error) {
	if err := validate(c, path, id); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("leader: %w: nil leadership function", framework.ErrInvalidArgument)
	}
	var o selectorOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	s := &Selector{client: c, path: path, id: id, fn: fn, opts: o, requeue: make(chan struct{}, 1), runner: framework.NewGoroutines()}
	// Always a revocable lock: its lease watches its own node, and ends (fn's context is
	// cancelled) when someone else deletes it: the next in line leads then. Without a
	// revocation listener a revocation request is ignored.
	onRevoke := func(*mutex.Lease) {}
	if o.onRevoke != nil {
		onRevoke = func(*mutex.Lease) { o.onRevoke(s) }
	}
	mopts := []mutex.Option{mutex.WithNodeData([]byte(id)), mutex.WithLocalQueue(false), mutex.WithRevocationListener(onRevoke)}
	m, err := mutex.New(c, path, mopts...)
	if err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	s.m = m
	return s, nil
}

// Path returns the election's path.
func (s *Selector) Path() string { return s.path }

// ID returns the participant id.
func (s *Selector) ID() string { return s.id }

// Start queues the selector for leadership and returns; the election runs on a goroutine
// of the selector until Close. ctx is not kept for its deadline or cancellation (Close
// stops the selector) but for its values: the contexts fn gets carry them. Starting twice
// is an error.
func (s *Selector) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateClosed:
		return ErrClosed
	case stateStarted:
		return ErrAlreadyStarted
	}
	select {
	case <-s.client.Done():
		return fmt.Errorf("leader: start %s: %w", s.path, framework.ErrClosed)
	default:
	}
	s.state = stateStarted
	// The selector outlives Start: it keeps ctx's values but not its cancellation, nor
	// a lease ctx may carry (a lease context would make its own lock refuse the selector,
	// or tie the selector to a holder it outlives).
	runCtx, cancel := context.WithCancel(locks.WithoutLeases(context.WithoutCancel(ctx)))
	s.cancel = cancel
	s.runDone = make(chan struct{})
	s.queued = true
	s.requeue <- struct{}{}
	s.runner.Go(func() { s.run(runCtx) })
	return nil
}

// Requeue queues the selector again, when it was not made with AutoRequeue: a Requeue
// that returns nil always takes effect. A selector waiting in line stays so (Requeue then
// does nothing more); one that leads, or is giving its leadership up (fn returned, the
// node being deleted), queues again once that is done. It fails before Start, after
// Close and once the client is closed. (Curator's requeue() does nothing, and returns
// false, while the selector leads or gives leadership up.)
func (s *Selector) Requeue() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateClosed:
		return ErrClosed
	case stateLatent:
		return ErrNotStarted
	}
	select {
	case <-s.client.Done():
		return fmt.Errorf("leader: requeue %s: %w", s.path, framework.ErrClosed)
	default:
	}
	if s.queued {
		if s.term {
			s.again = true
		}
		return nil
	}
	s.queued = true
	select {
	case s.requeue <- struct{}{}:
	default:
	}
	return nil
}

func (s *Selector) run(ctx context.Context) {
	defer close(s.runDone)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.client.Done():
			return
		case <-s.requeue:
		}
		backoff := minBackoff
		for {
			err := s.lead(ctx)
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, framework.ErrClosed) {
				s.setQueued(false)
				return // the client is closed
			}
			if err == nil {
				if s.endTerm() {
					backoff = minBackoff
					continue
				}
				break
			}
			s.client.Logger().Warn("selector could not take leadership; trying again", "component", "leader",
				"path", s.path, "id", s.id, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-s.client.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
		}
	}
}

// endTerm decides, once a term's node was given up, whether the selector queues again
// (AutoRequeue, or a Requeue made during the term) or leaves the line. One decision under
// the lock that Requeue takes: a Requeue either finds the selector still queued (and is
// counted here) or finds it out of line (and queues it itself).
func (s *Selector) endTerm() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	again := s.opts.autoRequeue || s.again
	s.term, s.again = false, false
	if !again {
		s.queued = false
	}
	return again
}

func (s *Selector) setQueued(q bool) {
	s.mu.Lock()
	s.queued = q
	s.mu.Unlock()
}

// lead takes the lock, runs fn, and gives the lock up. It returns an error only when it
// could not take the lock.
func (s *Selector) lead(ctx context.Context) error {
	lease, err := s.m.Acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			s.mu.Lock()
			s.givenUp = true
			s.mu.Unlock()
		}
		return err
	}
	lctx, stopLease := lease.Context(ctx)
	fctx, interrupt := context.WithCancel(context.WithValue(lctx, termKey{}, lease))
	s.mu.Lock()
	s.term, s.leading, s.leaseDone, s.interrupt = true, true, lease.Done(), interrupt
	s.mu.Unlock()

	err = s.call(fctx)

	s.mu.Lock()
	s.leading, s.leaseDone, s.interrupt = false, nil, nil
	s.mu.Unlock()
	interrupt()
	stopLease()
	if err != nil && !errors.Is(err, context.Canceled) {
		s.client.Logger().Warn("leadership function failed", "component", "leader", "path", s.path, "id", s.id, "err", err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := lease.Release(cctx); err != nil && !errors.Is(err, mutex.ErrLeaseLost) {
		// The delete is guaranteed: it goes on in the background.
		s.client.Logger().Warn("giving up leadership", "component", "leader", "path", s.path, "id", s.id, "err", err)
		if ctx.Err() != nil {
			// Close is waiting for this release: it says the node may still be there.
			s.mu.Lock()
			s.releaseErr = fmt.Errorf("leader: close %s: the lock node was not known to be deleted (it is deleted in the background): %w", s.path, err)
			s.mu.Unlock()
		}
	}
	return nil
}

// termKey carries the leadership lease in the context given to the selector's function.
type termKey struct{}

// SelectorToken returns the fencing token of the leadership that ctx — the context a
// Selector gives its function, or one derived from it — belongs to: the lock node's czxid
// shifted left by 8 bits, the same scale as Latch and mutex tokens. It strictly increases
// from one leader to the next. The first call reads the czxid (one request). It fails with
// ErrNotLeader for a context that carries no leadership.
func SelectorToken(ctx context.Context) (int64, error) {
	lease, ok := ctx.Value(termKey{}).(*mutex.Lease)
	if !ok {
		return 0, ErrNotLeader
	}
	return lease.Token(ctx)
}

func (s *Selector) call(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.client.Logger().Error("leadership function panicked", "component", "leader", "path", s.path, "id", s.id, "panic", r)
			err = fmt.Errorf("leader: leadership function panicked: %v", r)
		}
	}()
	return s.fn(ctx)
}

// HasLeadership reports whether fn is running now with a lease that may not have been
// lost.
func (s *Selector) HasLeadership() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leading && !isClosed(s.leaseDone)
}

// Interrupt cancels the context of the running leadership function, if any (Curator's
// interruptLeadership). Leadership ends when fn returns; with AutoRequeue the selector
// then queues again.
func (s *Selector) Interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.interrupt != nil {
		s.interrupt()
	}
}

// Participants returns the participants in line, the leader first.
func (s *Selector) Participants(ctx context.Context) ([]Participant, error) {
	return participants(ctx, s.client, s.path, lockName)
}

// Leader returns the participant first in line (the leader), or ErrNoLeader.
func (s *Selector) Leader(ctx context.Context) (Participant, error) {
	ps, err := s.Participants(ctx)
	return first(ps, err, s.path)
}

// Close leaves the election: it cancels fn's context or the waiting, waits for fn to
// return and for the node to be deleted (guaranteed: a delete that fails, or gets no
// answer within 10 s, is retried in the background, and its error returned, as
// Latch.Close does), and stops the selector's goroutine.
// A Close while the selector queues (its lock node being made, or waiting in line) waits
// too, up to 10 s, for the node that acquisition made to be deleted (once its create's
// answer comes); past that bound it returns an error saying so, and the node is deleted
// in the background. Close may be called more than once. Called from fn, it cancels fn's
// context and returns at once: the node is deleted once fn returns (a Close from another
// goroutine waits for that).
func (s *Selector) Close() error {
	s.mu.Lock()
	prev := s.state
	s.state = stateClosed
	cancel, runDone := s.cancel, s.runDone
	s.mu.Unlock()
	if prev == stateLatent || runDone == nil {
		return nil
	}
	cancel()
	if s.runner.Inside() {
		return nil
	}
	<-runDone
	s.mu.Lock()
	givenUp, releaseErr := s.givenUp, s.releaseErr
	s.mu.Unlock()
	if releaseErr != nil {
		return releaseErr
	}
	if !givenUp {
		return nil
	}
	// The acquisition Close gave up may have made a node (a create answered late): the
	// client deletes it in the background (its protected name is the acquisition's own).
	// Wait for that, bounded.
	ctx, stop := context.WithTimeout(context.Background(), cleanupTimeout)
	defer stop()
	if err := s.client.WaitGuaranteedDeletes(ctx); err != nil && !errors.Is(err, framework.ErrClosed) {
		return fmt.Errorf("leader: close %s: the lock node of the acquisition Close gave up was not known to be deleted within %v (it is deleted in the background): %w", s.path, cleanupTimeout, err)
	}
	return nil
}
