// Package versioned writes a node's data conditionally on its version and says whether the
// write is known to have happened, known not to have happened, or unknown. The shared
// count, shared value and atomic counters rest on it.
package versioned

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

// ErrUnknownOutcome matches the error of a write that may or may not have been applied:
// the connection was lost or the context ended while it was in flight, or it was retried
// after such a loss and the retry's answer cannot tell the two apart. It is
// framework.ErrUnknownOutcome: one errors.Is for one meaning, whichever package the error
// came from.
var ErrUnknownOutcome = framework.ErrUnknownOutcome

// ErrConflict matches the error of a conditional write that was provably not applied
// because the node was not at the expected version (or, for a create, already existed).
var ErrConflict = errors.New("node changed since it was read")

// ErrWrappedVersion matches the error of a write bound to a node read (SetDataOn) whose
// read version is -1: a node's version is a 32-bit counter that wraps, and ZooKeeper takes
// -1 for "any version", so no write can be conditional on it. Nothing was sent; a write
// of the node by any version (a forced set) makes its version 0 again. It is
// framework.ErrWrappedVersion: one errors.Is for one meaning.
var ErrWrappedVersion = framework.ErrWrappedVersion

// ErrNodeReplaced matches the error of a versioned write (SetDataOn) that the server
// applied to another node than the one read: the node was deleted and made again in
// between, and the new node was at the version read (a new node starts at 0 again). A
// version is not an identity; the czxid is. ZooKeeper cannot refuse such a write once it
// is sent: it overwrote what the new node held. The error matches ErrUnknownOutcome too
// (the change asked for, on the node read, was not made; something was written), never
// ErrConflict (which says nothing was written).
var ErrNodeReplaced = sentinel.New("the node was deleted and made again since it was read: the write was applied to the new node", framework.ErrUnknownOutcome)

// unknownError is a write whose outcome is unknown. It matches ErrUnknownOutcome and its
// cause, and says what happened in its own words (the framework's sentinel speaks of a
// resent write only).
type unknownError struct{ cause error }

func (e *unknownError) Error() string {
	return "outcome unknown: the write may or may not have been applied: " + e.cause.Error()
}

func (e *unknownError) Unwrap() []error { return []error{ErrUnknownOutcome, e.cause} }

func unknown(cause error) error { return &unknownError{cause: cause} }

// replacedError is a write applied to a node made again after the read (ErrNodeReplaced).
type replacedError struct {
	path          string
	read, written int64 // the czxid of the node read, and of the node written
}

func (e *replacedError) Error() string {
	return fmt.Sprintf("%s: %v (czxid %#x read, %#x written)", e.path, ErrNodeReplaced, e.read, e.written)
}

// Is makes errors.Is true for ErrNodeReplaced and ErrUnknownOutcome.
func (e *replacedError) Is(target error) bool {
	return target == ErrNodeReplaced || target == ErrUnknownOutcome
}

// conflict returns a provable conflict caused by err (the server's answer), without the
// framework's unknown-outcome mark that a resent write's answer may carry: the caller
// proved that the write was not applied.
func conflict(err error) error {
	if errors.Is(err, framework.ErrUnknownOutcome) {
		for _, cause := range []error{framework.ErrBadVersion, framework.ErrNodeExists, framework.ErrNoNode} {
			if errors.Is(err, cause) {
				return fmt.Errorf("%w: %w (%v)", ErrConflict, cause, err)
			}
		}
		return fmt.Errorf("%w (%v)", ErrConflict, err)
	}
	return fmt.Errorf("%w: %w", ErrConflict, err)
}

// disturbance counts the connection losses seen while a write is in flight.
type disturbance struct {
	n      atomic.Int64
	remove func()
	gen    uint64
	loss   <-chan struct{} // the generation's loss signal, closed on a suspension (standard error policy)
	c      *framework.Client
}

// watch starts noticing connection losses. The client itself marks a write it sent again
// after a connection loss (framework.ErrUnknownOutcome), which is what decides; the loss
// signal, generation and state seen here are a second, independent sign of the same.
func watch(c *framework.Client) *disturbance {
	gen := c.Generation()
	d := &disturbance{c: c, gen: gen, loss: c.LossSignal(gen)}
	d.remove = c.AddListener(func(s framework.State) {
		if !s.IsConnected() || s == framework.Reconnected {
			d.n.Add(1)
		}
	})
	return d
}

// seen reports whether the connection may have been lost since watch: a loss the client
// saw, a new generation, or a client not connected now.
func (d *disturbance) seen() bool {
	select {
	case <-d.loss:
		return true
	default:
	}
	return d.n.Load() > 0 || d.c.Generation() != d.gen || !d.c.State().IsConnected()
}

// isWriteUnknown reports whether err leaves a write's outcome unknown: anything that is
// not a definite answer from the server.
func isWriteUnknown(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, framework.ErrBadVersion),
		errors.Is(err, framework.ErrNoNode),
		errors.Is(err, framework.ErrNodeExists),
		errors.Is(err, framework.ErrNoAuth),
		errors.Is(err, framework.ErrInvalidArgument),
		errors.Is(err, framework.ErrDataTooLarge),
		errors.Is(err, framework.ErrNotStarted):
		return false
	}
	return true
}

// SetData sets path's data to data if its version is version. It returns the new Stat on
// success; an error matching ErrConflict (and framework.ErrBadVersion or ErrNoNode) when
// the write was provably not applied; an error matching ErrUnknownOutcome when it may
// have been. The client retries a write whose connection was lost; a retry that then
// finds a newer version cannot tell whether the first attempt was applied, so such a
// BadVersion is reported as unknown unless the node's current state proves otherwise
// (the version right after ours carries other data; that read back ends with ctx, the
// error then matching ctx's error as well); a retry that finds no node (the
// first attempt applied, then the node deleted?) is reported as unknown too. A version
// (other than -1) names a state of the node read, not the node: use SetDataOn to bind
// the write to that node.
//
// When ctx carries a guard (framework.WithGuard), the write goes in one transaction with
// the guard's checks: an error matching framework.ErrFenced says the guard no longer held
// and nothing was applied.
func SetData(ctx context.Context, c *framework.Client, path string, data []byte, version int32) (*framework.Stat, error) {
	return SetDataOn(ctx, c, path, data, version, 0)
}

// SetDataOn is SetData bound to the node that was read: czxid is that node's czxid (0:
// not bound). A node deleted and made again since the read restarts at version 0, so a
// versioned setData may be applied to a node it never read. SetDataOn succeeds only when
// the Stat the write returns has czxid; otherwise the write went to another node: it
// returns that node's new Stat with an error matching ErrNodeReplaced and
// ErrUnknownOutcome. Bound to a node (czxid not 0), version is the version read: -1 then
// means the version wrapped, and the write is refused (ErrWrappedVersion), never sent as
// "any version".
func SetDataOn(ctx context.Context, c *framework.Client, path string, data []byte, version int32, czxid int64) (*framework.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // nothing sent
	}
	if czxid != 0 && version == -1 {
		return nil, fmt.Errorf("%s: %w", path, ErrWrappedVersion)
	}
	d := watch(c)
	defer d.remove()
	st, err := setData(ctx, c, path, data, version)
	switch {
	case errors.Is(err, framework.ErrFenced):
		return nil, err // a guarded write refused: not applied
	case err == nil:
		if czxid != 0 && st.Czxid != czxid {
			return st, &replacedError{path: path, read: czxid, written: st.Czxid}
		}
		return st, nil
	case errors.Is(err, framework.ErrNoNode):
		if !d.seen() && !errors.Is(err, framework.ErrUnknownOutcome) {
			// Nothing to set, and no earlier attempt: not applied.
			return nil, conflict(err)
		}
		// A retry after a lost connection: the first attempt may have been applied and
		// the node deleted since. Nothing left to read back can tell.
		return nil, unknown(err)
	case errors.Is(err, framework.ErrBadVersion):
		if !d.seen() && !errors.Is(err, framework.ErrUnknownOutcome) {
			return nil, conflict(err)
		}
		// A retry after a lost connection: ours, if applied, made version+1 (on the
		// node read, when bound to it). The read back honours ctx (and is bounded):
		// when ctx ends first, the outcome stays unknown and the error matches ctx's.
		cctx, cancel := context.WithTimeout(ctx, readBackTimeout)
		defer cancel()
		now, nst, rerr := c.GetData(cctx, path)
		if rerr == nil && nst.Version == version+1 && !bytes.Equal(now, data) && (czxid == 0 || nst.Czxid == czxid) {
			return nil, conflict(err)
		}
		if rerr != nil && ctx.Err() != nil {
			return nil, unknown(fmt.Errorf("%w (not read back: %w)", err, context.Cause(ctx)))
		}
		return nil, unknown(err)
	case isWriteUnknown(err):
		return nil, unknown(err)
	default:
		return nil, err
	}
}

// Create creates path with data (parents as containers). It returns nil when the create
// was applied (by this call: a node someone deletes right after is no matter), an error
// matching ErrConflict (and framework.ErrNodeExists) when the node already existed and no
// retry was involved, ErrUnknownOutcome when the create may have been applied by an
// attempt whose answer was lost. When ctx carries a guard (framework.WithGuard), the
// create goes in one transaction with the guard's checks (framework.ErrFenced: refused,
// not applied).
func Create(ctx context.Context, c *framework.Client, path string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err // nothing sent
	}
	d := watch(c)
	defer d.remove()
	err := create(ctx, c, path, data)
	switch {
	case errors.Is(err, framework.ErrFenced):
		return err // a guarded write refused: not applied
	case err == nil:
		return nil
	case errors.Is(err, framework.ErrNodeExists):
		if !d.seen() && !errors.Is(err, framework.ErrUnknownOutcome) {
			return conflict(err)
		}
		return unknown(err)
	case isWriteUnknown(err):
		return unknown(err)
	default:
		return err
	}
}

// CreateOnce is Create for a create whose first attempt, if applied, must be the only
// one (a counter's first change): a create the client sent again after an attempt that
// may have been applied unanswered (framework.WithResent) returns an error matching
// ErrUnknownOutcome (ErrCreatedAgain) even when it succeeds, since the first attempt may
// have made the node, someone deleted it (a reset), and the one sent again made it once
// more. A guarded create (framework.WithGuard) is Create's transaction, which does not say
// whether it was sent again.
func CreateOnce(ctx context.Context, c *framework.Client, path string, data []byte) error {
	if _, ok := framework.GuardFrom(ctx); ok {
		return Create(ctx, c, path, data)
	}
	if err := ctx.Err(); err != nil {
		return err // nothing sent
	}
	var resent bool
	_, err := c.Create(ctx, path, data, framework.WithContainerParents(), framework.WithResent(&resent))
	switch {
	case err == nil && resent:
		return fmt.Errorf("%s: %w", path, ErrCreatedAgain)
	case err == nil:
		return nil
	case errors.Is(err, framework.ErrUnknownOutcome):
		return err // a resend answered NodeExists
	case errors.Is(err, framework.ErrNodeExists) && !resent:
		return conflict(err) // there before: not applied
	case resent || isWriteUnknown(err):
		return unknown(err)
	}
	return err
}

// ErrCreatedAgain is matched (with ErrUnknownOutcome) by CreateOnce's error when its
// create succeeded after the client sent it again.
var ErrCreatedAgain = sentinel.New("versioned: the create was sent again after a lost connection and made the node: it may have been applied twice (made, deleted by someone, made again)", ErrUnknownOutcome)

const readBackTimeout = 10 * time.Second
