package queue

import (
	"errors"
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrNilSerializer is returned by the constructors when the serializer is nil.
	ErrNilSerializer = sentinel.New("queue: nil serializer", framework.ErrInvalidArgument)
	// ErrInvalidArgument is returned for bad arguments: a nil client, a bad path, a
	// non-positive maxItems, an empty id, a zero due time, an empty PutMulti.
	ErrInvalidArgument = sentinel.New("queue: invalid argument", framework.ErrInvalidArgument)
	// ErrNotAnItem is matched by a *BadItemError whose node's data is not in Curator's
	// item format (or that the serializer refused).
	ErrNotAnItem = sentinel.New("queue: node data is not a queue item", framework.ErrBadData)
	// ErrEmpty is returned by SimpleQueue's Element and Remove when the queue is empty.
	ErrEmpty = errors.New("queue: empty")
	// ErrMaybeTwice is matched (together with framework.ErrUnknownOutcome) by the error of
	// a Put whose create was sent again after a connection loss: the first attempt may
	// have been applied too, so the item may be in the queue twice. The put itself
	// succeeded: the returned node path is valid.
	ErrMaybeTwice = sentinel.New("queue: put sent twice after a connection loss: the item may be queued twice", framework.ErrUnknownOutcome)
	// ErrNotRemoved is matched by the error of a consumer with a lock path whose handler
	// ran but which could not remove the item: its lock node was gone (its session ended,
	// also while the removal was in flight, or someone else deleted it while the handler
	// ran, also when the item is gone too: another consumer may have locked and taken it
	// since) or the removal failed until the clean-up timeout. The item stays in the
	// queue (it is given back, or its lock node goes with the session) and is delivered
	// again, or another consumer already took it: either way it is, or may have been,
	// delivered twice. When the removal's outcome was not known by the clean-up timeout
	// (its reply held up in the network, say), it may have been applied after all, and
	// the item is not delivered again; the error then matches
	// framework.ErrUnknownOutcome too (as it does when the session ended with the removal
	// in flight and the item is gone from the queue). The error is a *NotRemovedError,
	// which names the item's node.
	ErrNotRemoved = errors.New("queue: the handler ran but the item is not known to be removed, requeued or moved: it may be delivered again")
	// ErrAttemptsExhausted is matched by the *HandlerError of an item that failed its
	// handler for the WithMaxAttempts time in a row in this consumer: it was moved to the
	// dead-letter path (HandlerError.DeadLettered) or, without one, left in the queue
	// (unless someone else removed it meanwhile: HandlerError.RemovedByOther), and
	// Consume returned the error.
	ErrAttemptsExhausted = errors.New("queue: the item's handler failed the maximum number of attempts")
	// ErrMaybeGone is matched by the error of a take that removes the item before it
	// delivers it (SimpleQueue's Take, Poll and Remove; Consume and ConsumeOne without a
	// lock path) whose delete went out but whose outcome is unknown: its answer was lost
	// with the connection (the retry policy then gave up, or the context had ended), did
	// not come within the wait after the context ended, or a resend was answered "no
	// node" (the first attempt may have removed the item, or another consumer took it);
	// or its delete was applied while the queue path was deleted and made again (a new
	// item reusing the name: the delete, bound to the version read, may have removed that
	// one). The item is not delivered by this call and may be gone from the
	// queue: it is delivered at most once, perhaps never. With a lock path, a consumer's
	// removal of a handled item that was applied while the queue path was deleted and
	// made again returns it too (the handler has run; a new item at the reused name may be gone). The error is a *MaybeGoneError, which names
	// the node; it matches framework.ErrUnknownOutcome too, and the context's error when
	// the context ended. IDQueue.Remove without a lock path returns it in the same case
	// (the item is not counted as removed: a consumer may have taken it).
	ErrMaybeGone = sentinel.New("queue: the item's removal went out and its outcome is unknown: the item may be gone, undelivered", framework.ErrUnknownOutcome)
)

// errRemovedMeanwhile is finish's error when it found the item removed by someone else
// (without the lock) before any transaction of its own could have been applied: nothing
// was removed, requeued or moved by this consumer.
var errRemovedMeanwhile = errors.New("queue: the item was removed by someone else before this consumer removed it")

// errOutcomeUnknown is the cause of a *NotRemovedError whose removal (requeue, move) went
// out and whose outcome is unknown.
var errOutcomeUnknown = fmt.Errorf("%w: the removal went out and its answer was lost: the item may have been removed, requeued or moved, or still be in the queue", framework.ErrUnknownOutcome)

// MaybeGoneError is the error of a take whose delete's outcome is unknown (see
// ErrMaybeGone, which it matches): it names the node, so that a caller counting items
// knows which one may be lost.
type MaybeGoneError struct {
	Path string // the item's node
	Err  error  // the delete's error
}

// Error names the node and the delete's error.
func (e *MaybeGoneError) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrMaybeGone, e.Path, e.Err)
}

// Is reports whether target is ErrMaybeGone.
func (e *MaybeGoneError) Is(target error) bool { return target == ErrMaybeGone }

// Unwrap returns the delete's error.
func (e *MaybeGoneError) Unwrap() error { return e.Err }

// NotRemovedError is the error of a consumer with a lock path whose handler ran but which
// could not remove the item's node (see ErrNotRemoved, which it matches): it names the
// node, so that a caller counting deliveries knows which item may come twice.
type NotRemovedError struct {
	Path   string // the item's node
	Reason string // why, when Err is nil
	Err    error  // why: the removal's last error, or nil

	where itemWhere // where the item is, once its lock's session ended (whereInQueue otherwise)
}

// Error names the node and the reason.
func (e *NotRemovedError) Error() string {
	if e.Err != nil && e.Reason != "" {
		return fmt.Sprintf("%v: %s: %s: %v", ErrNotRemoved, e.Path, e.Reason, e.Err)
	}
	if e.Err != nil {
		return fmt.Sprintf("%v: %s: %v", ErrNotRemoved, e.Path, e.Err)
	}
	return fmt.Sprintf("%v: %s: %s", ErrNotRemoved, e.Path, e.Reason)
}

// Is reports whether target is ErrNotRemoved.
func (e *NotRemovedError) Is(target error) bool { return target == ErrNotRemoved }

// Unwrap returns the removal's last error, if any.
func (e *NotRemovedError) Unwrap() error { return e.Err }

// PanicError is the error of a handler that panicked (a *HandlerError's Err, found with
// errors.As): the consumer recovered the panic and released the item as it does one whose
// handler returned an error (requeued, removed or moved as the options say).
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the handler's goroutine's stack where it panicked
}

// Error gives the panic's value and the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("queue: the handler panicked: %v\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic's value when it is an error (panic(err)), nil otherwise.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// BadItemError reports a node of the queue whose data could not be decoded. The
// consumer leaves the node in place, skips it and reports it (to the WithErrorListener
// function, and as ConsumeOne's error when no other item was taken).
type BadItemError struct {
	Path string // the node's path
	Err  error  // why it was refused; wraps ErrNotAnItem

	node nodeVersion // the node's, as read (zero when not known)
}

// Error names the node and the reason.
func (e *BadItemError) Error() string {
	return fmt.Sprintf("queue: bad item at %s: %v", e.Path, e.Err)
}

// Unwrap returns the reason.
func (e *BadItemError) Unwrap() error { return e.Err }

// HandlerError reports that a consumer's handler returned an error for an item of the
// node at Path. Requeued says whether the node was put back (ErrorMode Requeue with a
// lock path) or removed. With WithMaxAttempts, Attempts counts the item's failures in a
// row in this consumer, this one included, and GaveUp says this was the last: the error
// then matches ErrAttemptsExhausted, and DeadLettered says whether the item was moved to
// the dead-letter path (as DeadLetterNode, when the move's answer came; empty when it
// was lost with the connection and the item was found gone: moved, since only the
// holder of its lock node removes it, unless someone removed it without the lock, as
// IDQueue.Remove without a lock path or a Curator consumer without one does).
// RemovedByOther says the consumer found the item removed by someone else (without the
// lock, or another consumer once the consumer's lock's session ended or its lock node was
// deleted by someone else) before it sent its own removal, requeue or move: nothing of it was applied (Requeued and DeadLettered are
// false), and the item is gone. When the removal, requeue or
// move could not be made (the error is then joined with an ErrNotRemoved one),
// OutcomeUnknown says it went out and its outcome is unknown (the NotRemovedError matches
// framework.ErrUnknownOutcome): the item was removed, requeued or moved, or is still in
// the queue; without it, nothing was applied and the item is in the queue. Error's text
// says which, and never claims an outcome nobody knows.
type HandlerError struct {
	Path           string // the item's node
	Requeued       bool   // put back at the end of the queue
	Err            error  // the handler's error
	Attempts       int    // with WithMaxAttempts: the item's failures in a row here, this one included
	GaveUp         bool   // with WithMaxAttempts: the last attempt (matches ErrAttemptsExhausted)
	DeadLettered   bool   // moved to the dead-letter path
	DeadLetterNode string // the node it was moved to, when the move's answer came
	RemovedByOther bool   // found removed by someone else before the consumer's removal, requeue or move went out
	OutcomeUnknown bool   // the removal, requeue or move went out and its outcome is unknown
	notApplied     bool   // the removal, requeue or move was not applied: the item is in the queue
	whereUnknown   bool   // not applied, and whether the item is in the queue is not known
	requeue        bool   // a requeue was sent
}

// noteRemovalError records in e what the error of the item's removal (requeue, move: a
// requeue when requeue is set) says of the item: applied while the queue path was made
// again (a *MaybeGoneError), outcome unknown, or not applied, the item in the queue, gone
// (taken by another consumer after the lock's session ended) or where is not known.
func (e *HandlerError) noteRemovalError(err error, requeue bool) {
	applied := errors.Is(err, ErrMaybeGone)
	e.Requeued, e.DeadLettered = requeue && applied, e.GaveUp && applied
	e.OutcomeUnknown = !applied && errors.Is(err, framework.ErrUnknownOutcome)
	e.requeue = requeue
	if applied || e.OutcomeUnknown {
		return
	}
	var nr *NotRemovedError
	errors.As(err, &nr)
	switch {
	case nr != nil && nr.where == whereGone:
		e.RemovedByOther = true
	case nr != nil && nr.where == whereUnknown:
		e.whereUnknown = true
	default:
		e.notApplied = true
	}
}

// Error names the node, the outcome and the handler's error.
func (e *HandlerError) Error() string {
	what := "removed"
	switch {
	case e.RemovedByOther && e.GaveUp:
		what = fmt.Sprintf("given up after %d attempts, but removed by someone else meanwhile: not moved", e.Attempts)
	case e.whereUnknown && e.GaveUp:
		what = fmt.Sprintf("given up after %d attempts, not moved by this consumer: in the queue, or taken by another consumer since its lock's session ended", e.Attempts)
	case e.whereUnknown:
		what = "not removed nor requeued by this consumer: in the queue, or taken by another consumer since its lock's session ended"
	case e.RemovedByOther:
		what = "removed by someone else meanwhile: not requeued nor removed by this consumer"
	case e.OutcomeUnknown && e.GaveUp:
		what = fmt.Sprintf("given up after %d attempts, its move to the dead-letter path went out and its outcome is unknown: moved, or in the queue", e.Attempts)
	case e.OutcomeUnknown && e.requeue:
		what = "its requeue went out and its outcome is unknown: requeued, or in the queue"
	case e.OutcomeUnknown:
		what = "its removal went out and its outcome is unknown: removed, or in the queue"
	case e.notApplied && e.GaveUp:
		what = fmt.Sprintf("given up after %d attempts, not moved: in the queue", e.Attempts)
	case e.notApplied:
		what = "not removed nor requeued: in the queue"
	case e.Requeued:
		what = "requeued"
	case e.DeadLettered && e.DeadLetterNode != "":
		what = fmt.Sprintf("given up after %d attempts, moved to %s", e.Attempts, e.DeadLetterNode)
	case e.DeadLettered:
		what = fmt.Sprintf("given up after %d attempts, moved to the dead-letter path", e.Attempts)
	case e.GaveUp:
		what = fmt.Sprintf("given up after %d attempts, left in the queue", e.Attempts)
	}
	return fmt.Sprintf("queue: handler failed on %s (%s): %v", e.Path, what, e.Err)
}

// Is reports whether target is ErrAttemptsExhausted and the consumer gave up on the
// item.
func (e *HandlerError) Is(target error) bool { return e.GaveUp && target == ErrAttemptsExhausted }

// Unwrap returns the handler's error.
func (e *HandlerError) Unwrap() error { return e.Err }

// errQueueUnread is in notRemade's error when the queue path could not be read.
var errQueueUnread = errors.New("the queue path could not be read after the removal, to tell the item from a new one at its name")
