package queue

import (
	"context"

	"github.com/zoocurator/zoocurator/framework"
)

// Queue is Curator's DistributedQueue: items in persistent sequential nodes
// <path>/queue-<seq>, taken in sequence order. It is safe for concurrent use; it holds no
// goroutine and needs no Close.
type Queue[T any] struct {
	*base[T]
}

// New returns a distributed queue of T at path; ser turns items into bytes (Bytes{} for a
// queue of []byte). It does no I/O: the queue path (and the lock path) are created on
// first use.
func New[T any](c *framework.Client, path string, ser Serializer[T], opts ...Option) (*Queue[T], error) {
	b, err := newBase(c, path, ser, kindPlain, opts)
	if err != nil {
		return nil, err
	}
	return &Queue[T]{b}, nil
}

// Put adds item at the end of the queue and returns its node's path. With WithMaxItems it
// first waits, honouring ctx, while the queue is full. An item too large for ZooKeeper's
// packet limit is refused with an error matching framework.ErrDataTooLarge. An error
// matching ErrMaybeTwice comes with a valid path: the item is queued, perhaps twice. A Put
// whose context ended (or whose retries gave up after a connection loss) while its create
// was in flight returns that error alone, with no path, and the item may be queued all
// the same: a caller that puts it again may queue it twice, with no ErrMaybeTwice.
func (q *Queue[T]) Put(ctx context.Context, item T) (string, error) {
	return q.put(ctx, itemPrefix, []T{item})
}

// PutMulti adds items in one node (Curator's putMulti): consumers take them together, in
// order.
func (q *Queue[T]) PutMulti(ctx context.Context, items []T) (string, error) {
	return q.put(ctx, itemPrefix, items)
}
