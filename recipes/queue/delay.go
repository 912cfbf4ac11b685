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
	*base[T]
}

// NewDelay returns a delay queue of T at path; see New.
func NewDelay[T any](c *framework.Client, path string, ser Serializer[T], opts ...Option) (*DelayQueue[T], error) {
	b, err := newBase(c, path, ser, kindDelay, opts)
	if err != nil {
		return nil, err
	}
	return &DelayQueue[T]{b}, nil
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
