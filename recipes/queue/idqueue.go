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
	*base[T]
}

// NewID returns an id queue of T at path; see New.
func NewID[T any](c *framework.Client, path string, ser Serializer[T], opts ...Option) (*IDQueue[T], error) {
	b, err := newBase(c, path, ser, kindID, opts)
	if err != nil {
		return nil, err
	}
	return &IDQueue[T]{b}, nil
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
// removed. Without a lock path, a removal whose outcome is unknown (its answer lost with
// the connection, or a resend answered "no node", which a consumer's take may explain) is
// not counted: Remove stops there with an error matching ErrMaybeGone (and
// framework.ErrUnknownOutcome). The id is compared as Put stores it (every "/" and "|" replaced by "_"), so
// Remove finds what Put("a/b") queued; Curator 5.4's remove compares the id as given and
// finds nothing for such an id. Ids that differ only there ("a/b", "a_b") are one id.
func (q *IDQueue[T]) Remove(ctx context.Context, id string) (int, error) {
	if id == "" {
		return 0, fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	want, _, _ := idOf(IDName(id))
	names, _, err := q.names(ctx, false)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if got, _, ok := idOf(name); !ok || got != want {
			continue
		}
		removed, err := q.remove(ctx, name)
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
func (q *IDQueue[T]) remove(ctx context.Context, name string) (bool, error) {
	itemPath := framework.JoinPath(q.path, name)
	if q.o.lockPath == "" {
		// As a take does (takeDelete): the delete is bound to the node read, and its
		// outcome is applied, not applied, or unknown; an unknown one (a resend answered
		// NoNode may be a consumer's take) is not counted but returned, as ErrMaybeGone.
		st, err := stat(ctx, q.c, itemPath)
		if err != nil || st == nil {
			return false, err
		}
		err = takeDelete(ctx, q.c, itemPath, st)
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
	if err := q.ensure(ctx, q.o.lockPath, &q.lockReady); err != nil {
		return false, err
	}
	lockGen, _ := q.c.Session()
	tok := newLockToken()
	ours, err := q.lock(ctx, framework.JoinPath(q.o.lockPath, name), tok)
	if err != nil || !ours {
		return false, err
	}
	st, err := stat(ctx, q.c, itemPath)
	if err != nil || st == nil {
		q.unlock(ctx, framework.JoinPath(q.o.lockPath, name), tok)
		return false, err
	}
	return true, q.finish(ctx, name, nil, st.Czxid, false, lockGen, tok)
}
