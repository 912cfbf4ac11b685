package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	// attempt may explain: a plain create answered NodeExists, a setData or setACL
	// answered BadVersion (versioned) or NoNode, a delete answered NoNode or BadVersion
	// (with AwaitOutcome), a transaction that failed. The first attempt may have been applied and
	// made that answer; ZooKeeper cannot say. errors.Is(err, ErrNodeExists) (or
	// ErrBadVersion, ...) still holds, so callers that treat "already there" as success
	// are unaffected. Curator returns the bare answer in these cases.
	//
	// It is the one sentinel for "may or may not have been applied" across the library:
	// the recipes' own unknown-outcome errors (atomic, sharedcount, queue.ErrMaybeGone and
	// ErrMaybeTwice, a versioned write that went to a node made again) match it too, also
	// when the caller's context ended while the write was in flight (their error then
	// matches the context's error as well).
	ErrUnknownOutcome = errors.New("framework: the outcome is unknown: an earlier attempt of this write may have been applied")
	// ErrClosed is returned by every operation on a client after Close. It is the family
	// of "closed": every recipe's ErrClosed (leader, discovery, cache, persistentnode,
	// groupmember, sharedcount) matches it. A write that Close cut short while a request
	// of it was in flight may have been applied: Create's WithResent says so, and a
	// transaction's error matches ErrUnknownOutcome too.
	ErrClosed = errors.New("framework: client closed")
	// ErrNotStarted is returned by operations on a client that was not started. Every
	// recipe's ErrNotStarted matches it.
	ErrNotStarted = errors.New("framework: client not started")
	// ErrAlreadyStarted is returned by a second Start of a client. Every recipe's
	// ErrAlreadyStarted matches it.
	ErrAlreadyStarted = errors.New("framework: client already started")
	// ErrWrappedVersion is matched by the error of a write that was to be conditional on
	// a version read from the server when that version is -1: a node's version is a
	// 32-bit counter that wraps (after 2^31-1 updates it goes negative, and reaches -1
	// after 2^32-1), and ZooKeeper takes -1 for "any version", so the write could only go
	// out unconditional. Nothing was sent. A write at any version, which the caller may
	// choose at its own risk, moves the version on to 0. Curator refuses a trySet at the
	// read version -1 in the same way.
	ErrWrappedVersion = errors.New("framework: the node's version read is -1 (wrapped), which ZooKeeper takes for any version: no write can be conditional on it")
	// ErrDataTooLarge is returned (wrapped in a *DataTooLargeError) when a request would
	// exceed the server's packet limit. It is not retried.
	ErrDataTooLarge = errors.New("framework: data too large")
	// ErrNotConnected is returned when no connection was made within the connection
	// timeout. It is a connection loss (it matches ErrConnectionClosed): the retry policy
	// retries it. Connect's error matches it too, and the last dial error (a refused
	// connection matches syscall.ECONNREFUSED).
	ErrNotConnected = newFamilyError("framework: not connected within the connection timeout", zk.ErrConnectionClosed)
	// ErrInvalidArgument is matched by every error that reports a bad argument or option,
	// in every package of the library: framework's (nil client, zero timeouts, empty
	// connect string, ErrInvalidPath), retry's (retry.ErrInvalidArgument) and each
	// recipe's (queue.ErrInvalidArgument, discovery.ErrInvalidName, ...). Its message has
	// no package prefix: the error that wraps it says whose argument it was, once
	// ("leader: invalid argument: empty participant id").
	ErrInvalidArgument error = &rootError{msg: "invalid argument"}
	// ErrLost is matched by the error of a recipe whose hold on something ended, or may
	// have ended, without the caller letting go: a lock's lease lost with its session
	// (mutex, rwlock and semaphore ErrLeaseLost), a lock node gone while waiting
	// (ErrNodeVanished), leadership lost (leader.ErrLeadershipLost), a double barrier left
	// by a lost session (doublebarrier.ErrSessionLost). Stop acting as the holder.
	ErrLost = errors.New("framework: lost: what was held is, or may be, gone")
	// ErrNotHeld is matched by the error of a call that acts as the holder or owner of
	// something the caller does not hold: releasing a lease released already (mutex,
	// rwlock, semaphore, multilock ErrNotHeld), asking a latch that does not lead for its
	// term (leader.ErrNotLeader), leaving a double barrier not entered
	// (doublebarrier.ErrNotEntered), updating an instance not registered
	// (discovery.ErrNotRegistered).
	ErrNotHeld = errors.New("framework: not held")
	// ErrLocked is matched by the error of a non-blocking acquisition refused because
	// others hold what it asked for (mutex and rwlock ErrLocked, semaphore.ErrNoLeases).
	ErrLocked = errors.New("framework: held by another")
	// ErrAlreadyHeld is matched by the error of an acquisition with a context that
	// carries a live lease of the same lock (mutex, rwlock and semaphore ErrAlreadyHeld):
	// re-enter through the lease instead.
	ErrAlreadyHeld = errors.New("framework: already held through the lease the context carries")
	// ErrBadData is matched by the error of a recipe that read a node whose data is not
	// in its format (written by someone else): atomic.ErrBadData, sharedcount.ErrBadData,
	// semaphore.ErrBadCount, queue.ErrNotAnItem, discovery.ErrNotInstance.
	ErrBadData = errors.New("framework: node data is not in the recipe's format")
)

// rootError is a family root whose message is not a package's (ErrInvalidArgument).
type rootError struct{ msg string }

func (e *rootError) Error() string { return e.msg }

// InvalidArgumentFamily marks the root of the invalid-argument family. Package retry
// sits below this one and cannot import it: its invalid-argument errors match every
// error whose type has this method (see retry.ErrInvalidArgument).
func (e *rootError) InvalidArgumentFamily() {}

// familyError is a sentinel with a message of its own that matches its families with
// errors.Is (the recipes use internal/sentinel, which framework cannot import).
type familyError struct {
	msg      string
	families []error
}

func newFamilyError(msg string, families ...error) error {
	return &familyError{msg: msg, families: families}
}

func (e *familyError) Error() string   { return e.msg }
func (e *familyError) Unwrap() []error { return e.families }

// OpError says which operation on which path failed. It wraps the cause.
type OpError struct {
	Op   string // "create", "delete", "getData", ...
	Path string // the path as the caller gave it (without namespace)
	Err  error
}

// Error says which operation on which path failed, and why, naming the framework once:
// "framework: create /x: client closed".
func (e *OpError) Error() string {
	return fmt.Sprintf("framework: %s %s: %s", e.Op, e.Path, strings.TrimPrefix(e.Err.Error(), "framework: "))
}

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
// A request the client closed under while it was in flight counts too
// (closedInFlightError); one never sent because the client was closed (plain ErrClosed)
// does not.
func mayHaveApplied(err error) bool {
	var closed *closedInFlightError
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, retry.ErrOperationTimeout) ||
		errors.As(err, &closed)
}

// closedInFlightError is the error of a request that was handed to the connection and
// not answered when the client closed: it matches ErrClosed, and it may have been
// applied. cause is the connection's own answer (nil: the wait was given up at Close).
type closedInFlightError struct{ cause error }

// errClosedInFlight is the error of a request whose wait Close gave up.
var errClosedInFlight error = &closedInFlightError{}

func (e *closedInFlightError) Error() string {
	msg := ErrClosed.Error() + " while a request was in flight"
	if e.cause != nil {
		msg += " (" + e.cause.Error() + ")"
	}
	return msg
}

func (e *closedInFlightError) Unwrap() error { return ErrClosed }

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
