package queue

import (
	"context"

	"github.com/zoocurator/zoocurator/framework"
)

// Queue is Curator's DistributedQueue: items in persistent sequential nodes
// <path>/queue-<seq>, taken in sequence order. It is safe for concurrent use; it holds no
// goroutine and needs no Close.
type Queue[T any] struct {
	b *base[T]
}

// New returns a distributed queue of T at path; ser turns items into bytes (Bytes{} for a
// queue of []byte). It does no I/O: the queue path (and the lock path) are created on
// first use.
func New[T any](c *framework.Client, path string, ser Serializer[T], opts ...Option) (*Queue[T], error) {
	b, err := newBase(c, path, ser, kindPlain, opts)
	if err != nil {
		return nil, err
	}
	return &Queue[T]{b: b}, nil
}

// Put adds item at the end of the queue and returns its node's path. With WithMaxItems it
// first waits, honouring ctx, while the queue is full. An item too large for ZooKeeper's
// packet limit is refused with an error matching framework.ErrDataTooLarge. An error
// matching ErrMaybeTwice comes with a valid path: the item is queued, perhaps twice. A Put
// whose context ended (or whose retries gave up after a connection loss) while its create
// was in flight returns that error alone, with no path, and the item may be queued all
// the same: a caller that puts it again may queue it twice, with no ErrMaybeTwice. Under a
// context carrying a guard (framework.WithGuard), the item's create goes in one transaction
// with the guard's check: a refused put matches framework.ErrFenced and queued nothing; a
// put that saw a connection loss while in flight is reported with ErrMaybeTwice.
func (q *Queue[T]) Put(ctx context.Context, item T) (string, error) {
	return q.put(ctx, itemPrefix, []T{item})
}

// PutMulti adds items in one node (Curator's putMulti): consumers take them together, in
// order.
func (q *Queue[T]) PutMulti(ctx context.Context, items []T) (string, error) {
	return q.put(ctx, itemPrefix, items)
}

// Consume takes items until ctx ends, calling h for each, in the queue's order; several
// consumers (in this process or others, Go or Java) may consume one queue. It returns
// ctx's error when ctx ends, or framework.ErrClosed. Errors it gets over (a bad item, a
// failed handler, a take whose outcome is unknown (ErrMaybeGone), a ZooKeeper error
// after the retry policy gave up) go to the function given with WithErrorListener; a bad
// item's node is left in place and skipped. With WithMaxAttempts and no dead-letter path,
// an item given up on ends Consume: it returns the item's *HandlerError (matching
// ErrAttemptsExhausted and the handler's error), the item left in the queue.
func (q *Queue[T]) Consume(ctx context.Context, h Handler[T]) error {
	return q.b.consume(ctx, h, false)
}

// ConsumeOne waits until it has taken one node of the queue (one Put or PutMulti) and
// handled its items with h. It returns h's error as a *HandlerError, and ZooKeeper's
// errors as they come; bad items are skipped (and reported to the error listener). With a
// lock path, a failed item whose removal (or requeue) failed, or was applied while the
// queue path was made again, returns both, joined: the *HandlerError and an error
// matching ErrNotRemoved or ErrMaybeGone (errors.As and errors.Is find each).
// Without a lock path, a take whose removal's outcome is unknown returns a
// *MaybeGoneError (see ErrMaybeGone) and h is not called; one whose removal was applied
// calls h, also when ctx ended while the removal was in flight. A removal applied while
// the queue path was deleted and made again returns a *MaybeGoneError too: it may have
// removed a new item at the reused name (see the package doc).
func (q *Queue[T]) ConsumeOne(ctx context.Context, h Handler[T]) error {
	return q.b.consume(ctx, h, true)
}

// Items returns the names of the queue's item nodes in the order consumers take them.
func (q *Queue[T]) Items(ctx context.Context) ([]string, error) { return q.b.items(ctx) }

// Path returns the queue's path.
func (q *Queue[T]) Path() string { return q.b.path }

func (q *Queue[T]) put(ctx context.Context, name string, items []T) (string, error) {
	return q.b.put(ctx, name, items)
}
