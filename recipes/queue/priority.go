package queue

import (
	"context"

	"github.com/zoocurator/zoocurator/framework"
)

// PriorityQueue is Curator's DistributedPriorityQueue: the priority is encoded in the
// node name (<path>/queue-<PriorityName><seq>) so that items are taken lowest priority
// value first, in put order within a priority. Consume lists the queue again after each
// item it takes (as Curator's refreshes when the children change), so that an item put
// meanwhile with a lower value is the next one taken. It is safe for concurrent use.
type PriorityQueue[T any] struct {
	b *base[T]
}

// NewPriority returns a priority queue of T at path; see New.
func NewPriority[T any](c *framework.Client, path string, ser Serializer[T], opts ...Option) (*PriorityQueue[T], error) {
	b, err := newBase(c, path, ser, kindPriority, opts)
	if err != nil {
		return nil, err
	}
	return &PriorityQueue[T]{b: b}, nil
}

// Put adds item with priority (lower values are taken first); see Queue.Put.
func (q *PriorityQueue[T]) Put(ctx context.Context, item T, priority int32) (string, error) {
	return q.put(ctx, itemPrefix+PriorityName(priority), []T{item})
}

// PutMulti adds items in one node with priority; see Queue.PutMulti.
func (q *PriorityQueue[T]) PutMulti(ctx context.Context, items []T, priority int32) (string, error) {
	return q.put(ctx, itemPrefix+PriorityName(priority), items)
}

// Consume takes items until ctx ends, calling h for each, lowest priority value first; see Queue.Consume.
func (q *PriorityQueue[T]) Consume(ctx context.Context, h Handler[T]) error {
	return q.b.consume(ctx, h, false)
}

// ConsumeOne waits until it has taken one node of the queue (one Put or PutMulti) and handled its
// items with h; see Queue.ConsumeOne.
func (q *PriorityQueue[T]) ConsumeOne(ctx context.Context, h Handler[T]) error {
	return q.b.consume(ctx, h, true)
}

// Items returns the names of the queue's item nodes in the order consumers take them.
func (q *PriorityQueue[T]) Items(ctx context.Context) ([]string, error) { return q.b.items(ctx) }

// Path returns the queue's path.
func (q *PriorityQueue[T]) Path() string { return q.b.path }

func (q *PriorityQueue[T]) put(ctx context.Context, name string, items []T) (string, error) {
	return q.b.put(ctx, name, items)
}
