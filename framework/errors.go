package framework

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/retry"
)

// ZooKeeper's conditions, usable with errors.Is on any error this package returns. They
// are go-zookeeper's own values, so errors.Is works with either name.
var (
	ErrNoNode           = zk.ErrNoNode
	ErrNodeExists       = zk.ErrNodeExists
	ErrBadVersion       = zk.ErrBadVersion
	ErrNotEmpty         = zk.ErrNotEmpty
	ErrNoAuth           = zk.ErrNoAuth
	ErrAuthFailed       = zk.ErrAuthFailed
	ErrInvalidACL       = zk.ErrInvalidACL
	ErrSessionExpired   = zk.ErrSessionExpired
	ErrSessionMoved     = zk.ErrSessionMoved
	ErrConnectionClosed = zk.ErrConnectionClosed
	ErrNoServer         = zk.ErrNoServer
	ErrNoChildrenForEph = zk.ErrNoChildrenForEphemerals
	ErrInvalidFlags     = zk.ErrInvalidFlags
)

var (
	// ErrUnknownOutcome is matched, together with the server's answer, by the error of a
	// write that the client sent again after a connection loss and whose answer the first
	// attempt may explain: a plain create answered NodeExists, a setData answered
	// BadVersion (versioned) or NoNode, a delete answered NoNode or BadVersion (with
	// AwaitOutcome), a transaction that failed. The first attempt may have been applied and
	// made that answer; ZooKeeper cannot say. errors.Is(err, ErrNodeExists) (or
	// ErrBadVersion, ...) still holds, so callers that treat "already there" as success
	// are unaffected. Curator returns the bare answer in these cases.
	//
	// It is the one sentinel for "may or may not have been applied" across the library:
	// the recipes' own unknown-outcome errors (atomic, sharedcount, queue.ErrMaybeGone, a
	// versioned write that went to a node made again) match it too, also when the caller's
	// context ended while the write was in flight (their error then matches the
	// context's error as well).
	ErrUnknownOutcome = errors.New("framework: the outcome is unknown: an earlier attempt of this write may have been applied")
	// ErrClosed is returned by every operation on a client after Close.
	ErrClosed = errors.New("framework: client closed")
	// ErrNotStarted is returned by operations on a client that was not started.
	ErrNotStarted = errors.New("framework: client not started")
	// ErrDataTooLarge is returned (wrapped in a *DataTooLargeError) when a request would
	// exceed the server's packet limit. It is not retried.
	ErrDataTooLarge = errors.New("framework: data too large")
	// ErrNotConnected is returned when no connection was made within the connection
	// timeout. It is a connection loss: the retry policy retries it.
	ErrNotConnected = fmt.Errorf("framework: not connected within the connection timeout: %w", zk.ErrConnectionClosed)
	// ErrInvalidArgument is returned for bad options and arguments (nil client, zero
	// timeouts, empty connect string, ...).
	ErrInvalidArgument = errors.New("framework: invalid argument")
)

// OpError says which operation on which path failed. It wraps the cause.
type OpError struct {
	Op   string // "create", "delete", "getData", ...
	Path string // the path as the caller gave it (without namespace)
	Err  error
}

// Error says which operation on which path failed, and why.
func (e *OpError) Error() string { return fmt.Sprintf("framework: %s %s: %v", e.Op, e.Path, e.Err) }

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// DataTooLargeError reports a request refused before sending because the server would
// drop the connection on a packet that large.
type DataTooLargeError struct {
	Path  string
	Size  int // bytes of data (plus path and framing) the request would carry
	Limit int // the client's limit (WithMaxPacketSize)
}

// Error says which request was refused and the sizes involved.
func (e *DataTooLargeError) Error() string {
	return fmt.Sprintf("framework: %s: request of %d bytes exceeds the server limit of %d bytes", e.Path, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrDataTooLarge) true.
func (e *DataTooLargeError) Is(target error) bool { return target == ErrDataTooLarge }

func opErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var oe *OpError
	if errors.As(err, &oe) {
		return err
	}
	return &OpError{Op: op, Path: path, Err: err}
}

// resent notes whether an attempt of a write failed after it may have been applied, so
// that the write, sent again, may meet its own first attempt.
type resent bool

// note records the error of one attempt.
func (r *resent) note(err error) {
	if err != nil && mayHaveApplied(err) {
		*r = true
	}
}

// mayHaveApplied reports whether a request that failed with err may still have been
// applied: a connection lost while it was in flight, or a caller that stopped waiting
// for it (its context ended, or retry.ErrOperationTimeout). Not ErrNoServer:
// go-zookeeper fails with it only requests it never sent (no server to send them to).
// Not a SessionMoved answer: the server refused the request (ZooKeeper makes a moved
// session's request an error transaction and applies nothing; the server then closes
// the connection, and a request still in flight on it fails with a connection loss,
// which counts).
func mayHaveApplied(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, retry.ErrOperationTimeout)
}

// unknownIf returns err, matching ErrUnknownOutcome as well when an attempt was resent
// and err is one of the answers the first attempt may have caused (targets).
func (r resent) unknownIf(err error, targets ...error) error {
	if !bool(r) || err == nil || errors.Is(err, ErrUnknownOutcome) {
		return err
	}
	for _, t := range targets {
		if errors.Is(err, t) {
			return &unknownOutcomeError{err: err}
		}
	}
	return err
}

// unknownOutcomeError is an answer that an earlier attempt of the same write may explain.
type unknownOutcomeError struct{ err error }

func (e *unknownOutcomeError) Error() string {
	return e.err.Error() + " (after a retry: the first attempt may have been applied; the outcome is unknown)"
}

func (e *unknownOutcomeError) Unwrap() []error { return []error{e.err, ErrUnknownOutcome} }
