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
)

// ErrUnknownOutcome matches the error of a write that may or may not have been applied:
// the connection was lost or the context ended while it was in flight, or it was retried
// after such a loss and the retry's answer cannot tell the two apart.
var ErrUnknownOutcome = errors.New("outcome unknown: the write may or may not have been applied")

// ErrConflict matches the error of a conditional write that was provably not applied
// because the node was not at the expected version (or, for a create, already existed).
var ErrConflict = errors.New("node changed since it was read")

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
// (the version right after ours carries other data).
func SetData(ctx context.Context, c *framework.Client, path string, data []byte, version int32) (*framework.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // nothing sent
	}
	d := watch(c)
	defer d.remove()
	st, err := c.SetData(ctx, path, data, version)
	switch {
	case err == nil:
		return st, nil
	case errors.Is(err, framework.ErrNoNode):
		// Nothing to set: a delete cannot be undone by our write, so it was not applied.
		return nil, fmt.Errorf("%w: %w", ErrConflict, err)
	case errors.Is(err, framework.ErrBadVersion):
		if !d.seen() && !errors.Is(err, framework.ErrUnknownOutcome) {
			return nil, fmt.Errorf("%w: %w", ErrConflict, err)
		}
		// A retry after a lost connection: ours, if applied, made version+1.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBackTimeout)
		defer cancel()
		now, nst, rerr := c.GetData(cctx, path)
		if rerr == nil && nst.Version == version+1 && !bytes.Equal(now, data) {
			return nil, fmt.Errorf("%w: %w", ErrConflict, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	case isWriteUnknown(err):
		return nil, fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	default:
		return nil, err
	}
}

// Create creates path with data (parents as containers). It returns an error matching
// ErrConflict (and framework.ErrNodeExists) when the node already existed and no retry
// was involved, ErrUnknownOutcome when the create may have been applied by an attempt
// whose answer was lost.
func Create(ctx context.Context, c *framework.Client, path string, data []byte) (*framework.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // nothing sent
	}
	d := watch(c)
	defer d.remove()
	_, st, err := c.CreateStat(ctx, path, data, framework.WithContainerParents())
	switch {
	case err == nil:
		return st, nil
	case errors.Is(err, framework.ErrNodeExists):
		if !d.seen() && !errors.Is(err, framework.ErrUnknownOutcome) {
			return nil, fmt.Errorf("%w: %w", ErrConflict, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	case isWriteUnknown(err):
		return nil, fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	default:
		return nil, err
	}
}

const readBackTimeout = 10 * time.Second
