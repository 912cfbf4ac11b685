package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/zoocurator/zoocurator/framework"
)

// DelayQueue is Curator's DistributedDelayQueue: each item carries a due time, encoded in
// its node name (<path>/queue-<DelayName><seq>), and is delivered no earlier than due
// (by the consumer's clock), earliest due first. It is safe for concurrent use.
type DelayQueue[T any] struct {
	b *base[T]
}

// NewDelay returns a delay queue of T at path; see New.
func NewDelay[T any](c *framework.Client, path string, ser Serializer[T], opts ...Option) (*DelayQueue[T], error) {
	b, err := newBase(c, path, ser, kindDelay, opts)
	if err != nil {
		return nil, err
	}
	return &DelayQueue[T]{b: b}, nil
}

// Put adds item, due at due (millisecond precision; must be after the Unix epoch); see
// Queue.Put.
func (q *DelayQueue[T]) Put(ctx context.Context, item T, due time.Time) (string, error) {
	return q.PutMulti(ctx, []T{item}, due)
}

// PutMulti adds items in one node, due at due; see Queue.PutMulti.
func (q *DelayQueue[T]) PutMulti(ctx context.Context, items []T, due time.Time) (string, error) {
	if due.UnixMilli() <= 0 {
		return "", fmt.Errorf("%w: due time %v is not after the Unix epoch", ErrInvalidArgument, due)
	}
	return q.put(ctx, itemPrefix+DelayName(due), items)
}

// Consume takes items until ctx ends, calling h for each, each once it is due, earliest due first; see Queue.Consume.
func (q *DelayQueue[T]) Consume(ctx context.Context, h Handler[T]) error {
	return q.b.consume(ctx, h, false)
}

// ConsumeOne waits until it has taken one node of the queue (one Put or PutMulti, once due) and handled its
// items with h; see Queue.ConsumeOne.
func (q *DelayQueue[T]) ConsumeOne(ctx context.Context, h Handler[T]) error {
	return q.b.consume(ctx, h, true)
}

// Items returns the names of the queue's item nodes in the order consumers take them (in order of due time, due or not).
func (q *DelayQueue[T]) Items(ctx context.Context) ([]string, error) { return q.b.items(ctx) }

// Path returns the queue's path.
func (q *DelayQueue[T]) Path() string { return q.b.path }

func (q *DelayQueue[T]) put(ctx context.Context, name string, items []T) (string, error) {
	return q.b.put(ctx, name, items)
}
