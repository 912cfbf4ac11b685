package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/zoocurator/zoocurator/framework"
)

// SimpleQueue is Curator's SimpleDistributedQueue: one item per persistent sequential node
// <path>/qn-<seq>, its data the serialized item itself (no item format), taken in
// sequence order. Taking reads the first node and deletes it: the item is the caller's
// once the delete is done, and a process that dies after that loses it (a Queue with a
// lock path is the safe way to consume). An item is delivered at most once: a take whose
// delete was applied returns the item, even when its context ended while the delete was
// in flight; a take whose delete's outcome is unknown (its answer lost, or a resend
// answered "no node") returns an error matching ErrMaybeGone and not the item, which may
// be gone. It is safe for concurrent use.
type SimpleQueue[T any] struct {
	c     *framework.Client
	path  string
	ser   Serializer[T]
	ready atomic.Bool
}

// NewSimple returns a simple queue of T at path; ser turns items into bytes (Bytes{} for
// []byte, as Curator's). It does no I/O.
func NewSimple[T any](c *framework.Client, path string, ser Serializer[T]) (*SimpleQueue[T], error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	if ser == nil {
		return nil, ErrNilSerializer
	}
	if err := checkPath("queue", path); err != nil {
		return nil, err
	}
	return &SimpleQueue[T]{c: c, path: path, ser: ser}, nil
}

// Path returns the queue's path.
func (q *SimpleQueue[T]) Path() string { return q.path }

func (q *SimpleQueue[T]) ensure(ctx context.Context) error {
	if q.ready.Load() {
		return nil
	}
	var err error
	if g, ok := framework.GuardFrom(ctx); ok { // guarded: nothing made once it no longer holds; persistent, not a container (see framework.Client.GuardedEnsure)
		err = q.c.GuardedEnsure(ctx, g, q.path)
	} else {
		_, err = q.c.Create(ctx, q.path, nil, framework.WithContainerParents(), framework.WithMode(framework.Container))
	}
	if err != nil && !errors.Is(err, framework.ErrNodeExists) {
		return err
	}
	q.ready.Store(true)
	return nil
}

// Offer adds item at the end of the queue and returns its node's path; see Queue.Put for
// ErrMaybeTwice, the size limit and a guard (framework.WithGuard): under a guard, a
// missing queue path is made as a persistent node, not a container.
func (q *SimpleQueue[T]) Offer(ctx context.Context, item T) (string, error) {
	data, err := q.ser.Serialize(item)
	if err != nil {
		return "", fmt.Errorf("queue: serialize: %w", err)
	}
	p := framework.JoinPath(q.path, simplePrefix)
	if err := q.c.CheckDataSize(p+"0000000000", len(data)); err != nil {
		return "", fmt.Errorf("queue: offer: %w", err)
	}
	if g, ok := framework.GuardFrom(ctx); ok {
		if err := g.Check(); err != nil { // ended: make nothing, not even the queue path
			return "", fmt.Errorf("queue: offer: %w", err)
		}
	}
	if err := q.ensure(ctx); err != nil {
		return "", err
	}
	return createCounted(ctx, q.c, p, data, func(ctx context.Context) error {
		q.ready.Store(false)
		return q.ensure(ctx)
	})
}

// Take removes and returns the head of the queue, waiting (honouring ctx) while the queue
// is empty. A node whose data the serializer refuses is skipped and left in place; Take
// returns a *BadItemError for it only when ctx ends before another item came. When ctx
// ends while the delete of the item is in flight, Take waits (up to 10 s more) for its
// answer: applied, it returns the item and no error; unknown, a *MaybeGoneError (see
// ErrMaybeGone). Poll and Remove do the same.
func (q *SimpleQueue[T]) Take(ctx context.Context) (T, error) {
	var zero T
	var bad error
	for {
		item, ok, w, err := q.element(ctx, true, true)
		if err != nil {
			var be *BadItemError
			if !errors.As(err, &be) {
				return zero, err
			}
			bad = err
		}
		if ok {
			return item, nil
		}
		select {
		case <-w.Done():
		case <-ctx.Done():
			if bad != nil {
				return zero, errors.Join(ctx.Err(), bad)
			}
			return zero, ctx.Err()
		case <-q.c.Done():
			return zero, framework.ErrClosed
		}
	}
}

// Poll removes and returns the head of the queue; ok is false when the queue is empty.
func (q *SimpleQueue[T]) Poll(ctx context.Context) (item T, ok bool, err error) {
	item, ok, _, err = q.element(ctx, true, false)
	return item, ok, err
}

// Remove removes and returns the head of the queue, or ErrEmpty.
func (q *SimpleQueue[T]) Remove(ctx context.Context) (T, error) {
	item, ok, _, err := q.element(ctx, true, false)
	if err == nil && !ok {
		err = ErrEmpty
	}
	return item, err
}

// Peek returns the head of the queue without removing it; ok is false when the queue is
// empty.
func (q *SimpleQueue[T]) Peek(ctx context.Context) (item T, ok bool, err error) {
	item, ok, _, err = q.element(ctx, false, false)
	return item, ok, err
}

// Element returns the head of the queue without removing it, or ErrEmpty.
func (q *SimpleQueue[T]) Element(ctx context.Context) (T, error) {
	item, ok, _, err := q.element(ctx, false, false)
	if err == nil && !ok {
		err = ErrEmpty
	}
	return item, err
}

// Items returns the names of the queue's nodes in order.
func (q *SimpleQueue[T]) Items(ctx context.Context) ([]string, error) {
	names, _, err := q.names(ctx, false)
	return names, err
}

func (q *SimpleQueue[T]) names(ctx context.Context, watch bool) ([]string, *framework.Watch, error) {
	if err := q.ensure(ctx); err != nil {
		return nil, nil, err
	}
	var kids []string
	var w *framework.Watch
	var err error
	if watch {
		kids, _, w, err = q.c.ChildrenW(ctx, q.path)
	} else {
		kids, _, err = q.c.Children(ctx, q.path)
	}
	if errors.Is(err, framework.ErrNoNode) { // the container was reaped
		q.ready.Store(false)
		return q.names(ctx, watch)
	}
	if err != nil {
		return nil, nil, err
	}
	out := kids[:0]
	for _, k := range kids {
		if strings.HasPrefix(k, simplePrefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, w, nil
}

// element returns the first decodable item, removing it if remove is set. Bad nodes are
// skipped; the first is returned as the error when no item was found.
func (q *SimpleQueue[T]) element(ctx context.Context, remove, watch bool) (item T, ok bool, w *framework.Watch, err error) {
	names, w, err := q.names(ctx, watch)
	if err != nil {
		return item, false, nil, err
	}
	var bad error
	for _, name := range names {
		p := framework.JoinPath(q.path, name)
		data, st, err := q.c.GetData(ctx, p)
		if errors.Is(err, framework.ErrNoNode) {
			continue
		}
		if err != nil {
			return item, false, w, err
		}
		it, derr := q.ser.Deserialize(data)
		if derr != nil {
			if bad == nil {
				bad = &BadItemError{Path: p, Err: fmt.Errorf("%w: %w", ErrNotAnItem, derr)}
			}
			continue
		}
		if remove {
			switch err := takeDelete(ctx, q.c, p, st, takeOutcomeWait); {
			case err == nil: // ours, also when ctx ended while the delete was in flight
			case errors.Is(err, framework.ErrUnknownOutcome):
				return item, false, w, &MaybeGoneError{Path: p, Err: err}
			case errors.Is(err, framework.ErrNoNode), errors.Is(err, framework.ErrBadVersion):
				continue // another taker was first
			default:
				return item, false, w, err
			}
		}
		return it, true, w, nil
	}
	return item, false, w, bad
}
