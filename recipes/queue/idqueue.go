package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
)

// IDQueue is Curator's DistributedIdQueue: each item carries an id, in its node name
// (<path>/queue-|<id>|<seq>), so that items can be removed by id before they are taken.
// Items are taken in put order. It is safe for concurrent use.
type IDQueue[T any] struct {
	b *base[T]
}

// NewID returns an id queue of T at path; see New.
func NewID[T any](c *framework.Client, path string, ser Serializer[T], opts ...Option) (*IDQueue[T], error) {
	b, err := newBase(c, path, ser, kindID, opts)
	if err != nil {
		return nil, err
	}
	return &IDQueue[T]{b: b}, nil
}

// Put adds item with id (not empty; "/" and "|" in it become "_", as in Curator); see
// Queue.Put.
func (q *IDQueue[T]) Put(ctx context.Context, item T, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	return q.put(ctx, itemPrefix+IDName(id), []T{item})
}

// Remove removes the queued items with id that no consumer holds, and returns how many it
// removed (an item someone else removed meanwhile is not counted). A removal whose
// outcome is unknown (its answer lost with the connection, or its context ended while it
// was in flight; without a lock path also a resend answered "no node", which a
// consumer's take may explain) is not counted: Remove stops there with an error matching
// ErrMaybeGone (and framework.ErrUnknownOutcome); one applied and answered is counted,
// also when ctx ended right after it. Remove returns when ctx ends, with a lock path too
// (its lock node, if made, is deleted in the background). The id is compared as Put
// stores it (every "/" and "|" replaced by "_"), so Remove finds what Put("a/b") queued;
// Curator 5.4's remove compares the id as given and finds nothing for such an id. Ids that differ only there ("a/b", "a_b") are one id.
func (q *IDQueue[T]) Remove(ctx context.Context, id string) (int, error) {
	if id == "" {
		return 0, fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	want, _, _ := idOf(IDName(id))
	names, _, err := q.b.names(ctx, false)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if got, _, ok := idOf(name); !ok || got != want {
			continue
		}
		removed, err := q.b.removeID(ctx, name)
		if err != nil {
			return n, err
		}
		if removed {
			n++
		}
	}
	return n, nil
}

// remove deletes one item node without handling it (under its lock, with a lock path).
func (b *base[T]) removeID(ctx context.Context, name string) (bool, error) {
	itemPath := framework.JoinPath(b.path, name)
	if b.o.lockPath == "" {
		// As a take does (takeDelete): the delete is bound to the node read, and its
		// outcome is applied, not applied, or unknown; an unknown one (a resend answered
		// NoNode may be a consumer's take) is not counted but returned, as ErrMaybeGone.
		st, err := stat(ctx, b.c, itemPath)
		if err != nil || st == nil {
			return false, err
		}
		err = takeDelete(ctx, b.c, itemPath, st, removeOutcomeWait)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, framework.ErrUnknownOutcome):
			return false, &MaybeGoneError{Path: itemPath, Err: err}
		case errors.Is(err, framework.ErrNoNode), errors.Is(err, framework.ErrBadVersion):
			return false, nil // a consumer took it, or it was removed
		}
		return false, err
	}
	if err := b.ensure(ctx, b.o.lockPath, &b.lockReady); err != nil {
		return false, err
	}
	lockGen, lockSid := b.c.Session()
	tok := newLockToken()
	ours, err := b.lock(ctx, framework.JoinPath(b.o.lockPath, name), tok)
	if err != nil || !ours {
		return false, err
	}
	st, err := stat(ctx, b.c, itemPath)
	if err != nil || st == nil {
		b.unlock(ctx, framework.JoinPath(b.o.lockPath, name), tok)
		return false, err
	}
	// No handler has run: the removal ends with ctx (finish's bound is ctx itself).
	_, err = b.finish(ctx, ctx, removal{name: name, czxid: st.Czxid, lockGen: lockGen, lockSid: lockSid, tok: tok})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errQueueUnread):
		// Applied and answered, and the queue path could not be read after it (ctx
		// ended) to tell the item from a new one at its name: counted, as a take's
		// delete without a lock path is (takeDelete). Only a queue path deleted and made
		// again within the removal's round trip would make it another item's.
		return true, nil
	case errors.Is(err, errRemovedMeanwhile):
		return false, nil // removed by someone else (without the lock) meanwhile
	}
	return false, removeError(ctx, itemPath, err)
}

// removeError turns finish's error for Remove, which ran no handler, into one that says
// what is known: the removal went out and its outcome is unknown (a *MaybeGoneError: the
// item may be gone), or the item was not removed.
func removeError(ctx context.Context, itemPath string, err error) error {
	var nr *NotRemovedError
	if errors.As(err, &nr) {
		cause := nr.Err
		switch {
		case nr.Reason != "" && cause != nil:
			cause = fmt.Errorf("%s: %w", nr.Reason, cause)
		case nr.Reason != "":
			cause = errors.New(nr.Reason)
		}
		if errors.Is(err, framework.ErrUnknownOutcome) {
			err = &MaybeGoneError{Path: itemPath, Err: cause}
		} else {
			err = fmt.Errorf("queue: remove %s: not removed: %w", itemPath, cause)
		}
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = errors.Join(err, ctx.Err())
	}
	return err
}

// Consume takes items until ctx ends, calling h for each, in put order; see Queue.Consume.
func (q *IDQueue[T]) Consume(ctx context.Context, h Handler[T]) error {
	return q.b.consume(ctx, h, false)
}

// ConsumeOne waits until it has taken one node of the queue (one Put) and handled its
// items with h; see Queue.ConsumeOne.
func (q *IDQueue[T]) ConsumeOne(ctx context.Context, h Handler[T]) error {
	return q.b.consume(ctx, h, true)
}

// Items returns the names of the queue's item nodes in the order consumers take them.
func (q *IDQueue[T]) Items(ctx context.Context) ([]string, error) { return q.b.items(ctx) }

// Path returns the queue's path.
func (q *IDQueue[T]) Path() string { return q.b.path }

func (q *IDQueue[T]) put(ctx context.Context, name string, items []T) (string, error) {
	return q.b.put(ctx, name, items)
}
