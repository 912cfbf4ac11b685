package barrier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/retry"
)

// retryPause is how long Wait pauses after a check that failed with a connection loss the
// client's retry policy gave up on, unless the client reconnects sooner.
const retryPause = time.Second

// Barrier is a distributed barrier on one ZooKeeper path. It holds no state of its own
// besides its client and path, and is safe for concurrent use.
type Barrier struct {
	client *framework.Client
	path   string
}

// New returns a barrier on path. It checks its arguments (a nil client, an invalid,
// root or reserved path) but does not talk to ZooKeeper.
func New(c *framework.Client, path string) (*Barrier, error) {
	if c == nil {
		return nil, fmt.Errorf("barrier: %w: nil client", framework.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("barrier: %w", err)
	}
	if path == "/" || framework.IsReservedPath(path) {
		return nil, fmt.Errorf("barrier: %w: %q cannot be a barrier path", framework.ErrInvalidArgument, path)
	}
	return &Barrier{client: c, path: path}, nil
}

// Path returns the barrier's path.
func (b *Barrier) Path() string { return b.path }

// Set sets the barrier: it creates the barrier node, and its missing parents. A barrier
// that is set already is not an error.
func (b *Barrier) Set(ctx context.Context) error {
	_, err := b.client.Create(ctx, b.path, nil, framework.WithContainerParents())
	if err != nil && !errors.Is(err, framework.ErrNodeExists) {
		return fmt.Errorf("barrier: set %s: %w", b.path, err)
	}
	return nil
}

// Remove removes the barrier, which releases every waiter. A barrier that is not set is
// not an error.
func (b *Barrier) Remove(ctx context.Context) error {
	if err := b.client.Delete(ctx, b.path, framework.Quietly()); err != nil {
		return fmt.Errorf("barrier: remove %s: %w", b.path, err)
	}
	return nil
}

// IsSet reports whether the barrier is set now. Like Wait, it syncs the client's server
// with the leader before it reads, so a server that lags or is cut off from its peers
// cannot answer from its old state; on such a server IsSet waits until ctx ends or the
// client reaches a server that is up to date. Curator has no such call.
func (b *Barrier) IsSet(ctx context.Context) (bool, error) {
	if err := b.client.Sync(ctx, b.path); err != nil {
		return false, fmt.Errorf("barrier: check %s: %w", b.path, err)
	}
	st, err := b.client.Exists(ctx, b.path)
	if err != nil {
		return false, fmt.Errorf("barrier: check %s: %w", b.path, err)
	}
	return st != nil, nil
}

// Wait blocks until the barrier is not set, ctx ends or the client is closed. It returns
// nil at once when the barrier is not set. A deadline on ctx is Curator's
// waitOnBarrier(time, unit); when ctx ends Wait returns an error that matches ctx.Err()
// (errors.Is), and when the client is closed one that matches framework.ErrClosed.
// A Remove after Wait saw the barrier set releases it even when the barrier is set
// again before Wait looks once more: the server's word that the node was deleted is
// enough.
//
// Wait never passes on a stale read: before the check that may release it (the first,
// and the first after a reconnection) it syncs the client's server with the leader, so
// a server cut off from its peers, which still answers from its old state, cannot
// release a waiter on a barrier that was set meanwhile; such a Wait waits until the
// client reaches a server that is up to date. Curator's waitOnBarrier reads without a
// sync.
//
// Wait survives connection loss: it keeps waiting while the client is disconnected and
// looks at the barrier again once the client is back, with the same session or a new
// one. Wait leaves no goroutine behind when it returns.
func (b *Barrier) Wait(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	unsubscribe := b.client.AddListener(func(s framework.State) {
		if s == framework.Reconnected || s == framework.Connected {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	})
	defer unsubscribe()
	// A check that releases the waiter reads from a server that is up to date: a server
	// cut off from its peers still answers from its old state ("not set" for a barrier
	// set since), so the first check, and every one after a reconnection or the end of
	// the watch, syncs first. A check after the watch fired for a change needs none: the
	// server had applied that change, which came after the barrier was seen set.
	fresh := false
	for {
		if err := ctx.Err(); err != nil {
			return b.waitErr(err)
		}
		var err error
		if !fresh {
			err = b.client.Sync(ctx, b.path)
		}
		var (
			w   *framework.Watch
			set bool
		)
		if err == nil {
			set, w, err = b.check(ctx)
		}
		fresh = false
		switch {
		case err == nil && !set:
			return nil
		case err == nil && w != nil:
			select {
			case <-w.Done():
				// Deleted: the barrier was removed since it was seen set, which releases
				// the waiter, even when it has been set again since (the next batch). For
				// the children watch of an unreadable barrier, a deleted parent proves the
				// same: it had no children left. Changed, or the session ended
				// (EventNotWatching): look again.
				ev := w.Event().Type
				if ev == zk.EventNodeDeleted {
					return nil
				}
				fresh = ev != zk.EventNotWatching
			case <-wake: // reconnected: look again, in case the watch was not re-armed
			case <-ctx.Done():
				return b.waitErr(ctx.Err())
			case <-b.client.Done():
				return b.waitErr(framework.ErrClosed)
			}
		case err == nil || ctx.Err() == nil && retry.IsRetryable(err, true):
			// Set, but nothing to watch (see check); or cut off for longer than the retry
			// policy allows: look again after a pause, or once the client is back.
			t := time.NewTimer(retryPause)
			select {
			case <-wake:
			case <-t.C:
			case <-ctx.Done():
			case <-b.client.Done():
			}
			t.Stop()
		default:
			return b.waitErr(err)
		}
	}
}

// check reports whether the barrier node exists and, when it does, returns a watch that
// fires when it may be gone; a nil watch when it can set none. It reads with a data
// watch, not an exists watch, so that no watch is left behind when the node is gone.
//
// A node this client may not read (NoAuth) is set all the same; but ZooKeeper delivers
// no event on a node to a client that may not read it, so a watch on the node itself
// would never fire. check then lists the parent's children with a watch, which fires
// when the node is deleted (the parent's permissions decide); when the parent may not be
// read either, it checks with exists, which needs no permission, and sets no watch: Wait
// looks again after a pause. (Curator's waitOnBarrier checks with an exists watch only,
// which on such a node never fires.)
func (b *Barrier) check(ctx context.Context) (bool, *framework.Watch, error) {
	_, _, w, err := b.client.GetDataW(ctx, b.path)
	switch {
	case errors.Is(err, framework.ErrNoNode):
		return false, nil, nil
	case !errors.Is(err, framework.ErrNoAuth):
		return err == nil, w, err
	}
	names, _, w, err := b.client.ChildrenW(ctx, framework.ParentPath(b.path))
	switch {
	case errors.Is(err, framework.ErrNoNode):
		return false, nil, nil
	case err == nil:
		return slices.Contains(names, framework.NodeName(b.path)), w, nil
	case !errors.Is(err, framework.ErrNoAuth):
		return false, nil, err
	}
	st, err := b.client.Exists(ctx, b.path)
	return st != nil, nil, err
}

func (b *Barrier) waitErr(err error) error {
	return fmt.Errorf("barrier: wait on %s: %w", b.path, err)
}
