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
	// also while the removal was in flight) or the removal failed until the clean-up
	// timeout. The item stays in the queue (it is given back, or its lock node goes with
	// the session) and is delivered again, or another consumer already took it: either
	// way it is, or may have been, delivered twice. When the removal's outcome was not
	// known by the clean-up timeout (its reply held up in the network, say), it may have
	// been applied after all, and the item is not delivered again. The error is a
	// *NotRemovedError, which names the item's node.
	ErrNotRemoved = errors.New("queue: item handled but not known to be removed: it may be delivered again")
	// ErrAttemptsExhausted is matched by the *HandlerError of an item that failed its
	// handler for the WithMaxAttempts time in a row in this consumer: it was moved to the
	// dead-letter path (HandlerError.DeadLettered) or, without one, left in the queue,
	// and Consume returned the error.
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
}

// Error names the node and the reason.
func (e *NotRemovedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v: %s: %v", ErrNotRemoved, e.Path, e.Err)
	}
	return fmt.Sprintf("%v: %s: %s", ErrNotRemoved, e.Path, e.Reason)
}

// Is reports whether target is ErrNotRemoved.
func (e *NotRemovedError) Is(target error) bool { return target == ErrNotRemoved }

// Unwrap returns the removal's last error, if any.
func (e *NotRemovedError) Unwrap() error { return e.Err }

// BadItemError reports a node of the queue whose data could not be decoded. The
// consumer leaves the node in place, skips it and reports it (to the WithErrorListener
// function, and as ConsumeOne's error when no other item was taken).
type BadItemError struct {
	Path string // the node's path
	Err  error  // why it was refused; wraps ErrNotAnItem
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
type HandlerError struct {
	Path           string // the item's node
	Requeued       bool   // put back at the end of the queue
	Err            error  // the handler's error
	Attempts       int    // with WithMaxAttempts: the item's failures in a row here, this one included
	GaveUp         bool   // with WithMaxAttempts: the last attempt (matches ErrAttemptsExhausted)
	DeadLettered   bool   // moved to the dead-letter path
	DeadLetterNode string // the node it was moved to, when the move's answer came
}

// Error names the node, the outcome and the handler's error.
func (e *HandlerError) Error() string {
	what := "removed"
	switch {
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
