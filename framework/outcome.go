package framework

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// AwaitOutcome makes a Delete say whether it was applied, also when ctx ends while its
// request is in flight: rather than return ctx's error at once, Delete then waits up to d
// more for the server's answer, and it sends nothing (no first request, no resend) once
// ctx has ended. Its error then reads:
//   - nil: the delete was applied (also when ctx ended meanwhile: the caller checks ctx);
//   - an error matching ErrUnknownOutcome: it may have been applied — a request went out
//     and no answer says whether it was (none came within d, the connection was lost with
//     it in flight, the retry policy gave up after such a loss), or a resend was answered
//     NoNode or BadVersion, which the first attempt may have caused. When ctx ended it
//     matches ctx's error too;
//   - any other error: not applied (ctx's error alone when ctx ended before the request
//     went out; NoNode, BadVersion, ... as the server answered).
//
// A recipe whose delete consumes something (a queue item) uses it, with WithMaxCzxid
// given the czxid of the node it read, to deliver what it removed and nothing it did not.
// d bounds only the wait after ctx ended. It cannot go with WithChildren or InBackground.
// The default is off: Delete returns ctx's error as soon as ctx ends.
func AwaitOutcome(d time.Duration) DeleteOption { return func(o *deleteOpts) { o.await = d } }

// AsRead deletes the node the caller has just read, with Stat st, and no other: it is
// WithMaxCzxid(st.Czxid) with WithVersion(st.Version), except that the first attempt
// sends the delete at once, the caller's read standing for the one WithMaxCzxid makes
// (a request fewer); an attempt sent again (after a connection loss, perhaps much later)
// reads the node first. Only a delete and re-create between the caller's read and the
// delete can slip through, as with WithMaxCzxid: the caller deletes right after its read.
// A version read as -1 (wrapped) fails the delete with ErrWrappedVersion, nothing sent.
// A nil st does nothing.
func AsRead(st *Stat) DeleteOption {
	return func(o *deleteOpts) {
		if st != nil {
			o.maxCzxid, o.version, o.asRead = st.Czxid, st.Version, true
		}
	}
}

// awaiter carries one write through the end of its caller's context: it gives the
// write's requests a context of their own that ends with the caller's only when no request
// is in flight (or d after the caller's ended), keeps a request from going out once the
// caller's context ended, and records the answers, so that the write's outcome is known
// even when the wait for an answer ended as the answer came. A nil *awaiter does nothing.
type awaiter struct {
	c      *Client
	parent context.Context
	ctx    context.Context // the requests' context
	cancel context.CancelFunc
	d      time.Duration
	stopAF func() bool

	mu       sync.Mutex
	inflight int
	answered bool  // a request sent was answered; last is its answer
	last     error // the latest answer (mapped)
	loss     bool  // an answer was a connection loss (or the client closed under it)
	unsent   bool  // the latest request was not sent (the caller's context had ended)
	timer    *time.Timer
}

func newAwaiter(c *Client, parent context.Context, d time.Duration) *awaiter {
	a := &awaiter{c: c, parent: parent, d: d}
	a.ctx, a.cancel = context.WithCancel(context.WithoutCancel(parent))
	a.stopAF = context.AfterFunc(parent, a.parentDone)
	return a
}

// parentDone ends the requests' context now if nothing is in flight, else d from now.
func (a *awaiter) parentDone() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inflight == 0 {
		a.cancel()
		return
	}
	if a.timer == nil {
		a.timer = time.AfterFunc(a.d, a.cancel)
	}
}

// stop releases the awaiter; call it once the write returned.
func (a *awaiter) stop() {
	if a == nil {
		return
	}
	a.stopAF()
	a.mu.Lock()
	if a.timer != nil {
		a.timer.Stop()
	}
	a.mu.Unlock()
	a.cancel()
}

// indefinite reports whether an answer leaves the request's outcome open.
func indefinite(err error) bool {
	return err != nil && (connectionClass(err) || errors.Is(err, ErrClosed))
}

// awaitReq wraps a write request (what call runs on its goroutine): it is not sent once
// the caller's context ended (the caller's error is returned instead), and while it is in
// flight the awaiter counts it; its answer is recorded.
func awaitReq[T any](a *awaiter, req func() (T, error)) func() (T, error) {
	if a == nil {
		return req
	}
	return func() (T, error) {
		a.mu.Lock()
		if err := a.parent.Err(); err != nil {
			a.unsent = true
			a.mu.Unlock()
			var zero T
			return zero, err // not sent
		}
		a.inflight++
		a.unsent = false
		a.mu.Unlock()
		v, err := req()
		a.mu.Lock()
		defer a.mu.Unlock()
		a.inflight--
		m := a.c.mapErr(err)
		a.answered, a.last = true, m
		if indefinite(m) {
			a.loss = true
			if a.inflight == 0 && a.parent.Err() != nil {
				// Lost after the caller's context ended: nothing will be sent again and
				// nothing more can be learnt. (Not on an answer that says: the caller's
				// call may then see this context end before the answer it carries.)
				a.cancel()
			}
		}
		return v, err
	}
}

// result turns the write's final error into what AwaitOutcome documents.
func (a *awaiter) result(err error) error {
	if a == nil || err == nil {
		return err
	}
	a.mu.Lock()
	inflight, answered, last, loss, unsent := a.inflight, a.answered, a.last, a.loss, a.unsent
	a.mu.Unlock()
	perr := a.parent.Err()
	isCtx := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if isCtx && inflight == 0 && answered && !unsent && !indefinite(last) {
		// The wait ended as the answer came: the answer is the outcome.
		if last == nil {
			return nil
		}
		if loss && (errors.Is(last, ErrNoNode) || errors.Is(last, ErrBadVersion)) {
			return &awaitedError{err: last} // a resend's answer: the first attempt may explain it
		}
		return last
	}
	if perr != nil && isCtx && !errors.Is(err, perr) {
		err = fmt.Errorf("%w (%v)", perr, err) // the requests' context ended because the caller's did
	}
	pending := inflight > 0 || (answered && indefinite(last))
	if !pending {
		return err
	}
	if perr != nil && !errors.Is(err, perr) {
		err = errors.Join(err, perr)
	}
	if errors.Is(err, ErrUnknownOutcome) {
		return err
	}
	return &awaitedError{err: err}
}

// awaitedError is the error of a write sent without an answer that says whether it was
// applied.
type awaitedError struct{ err error }

func (e *awaitedError) Error() string {
	return e.err.Error() + " (the request went out and no answer says whether it was applied: the outcome is unknown)"
}

func (e *awaitedError) Unwrap() []error { return []error{e.err, ErrUnknownOutcome} }
