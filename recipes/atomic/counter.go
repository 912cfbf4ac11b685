package atomic

import (
	"context"
	"encoding/binary"

	"github.com/zoocurator/zoocurator/framework"
)

// Integer is the integer types a Counter can hold.
type Integer interface{ ~int32 | ~int64 }

// Counter is a distributed counter of type T; use Long or Int. It is safe for concurrent
// use.
type Counter[T Integer] struct{ v *Value }

// Long is Curator's DistributedAtomicLong: an int64 stored as 8 big-endian bytes.
type Long = Counter[int64]

// Int is Curator's DistributedAtomicInteger: an int32 stored as 4 big-endian bytes.
type Int = Counter[int32]

// NewLong returns a 64-bit counter at path. It checks its arguments but does not talk to
// ZooKeeper.
func NewLong(c *framework.Client, path string, opts ...Option) (*Long, error) {
	return newCounter[int64](c, path, opts)
}

// NewInt returns a 32-bit counter at path. It checks its arguments but does not talk to
// ZooKeeper.
func NewInt(c *framework.Client, path string, opts ...Option) (*Int, error) {
	return newCounter[int32](c, path, opts)
}

func newCounter[T Integer](c *framework.Client, path string, opts []Option) (*Counter[T], error) {
	v, err := NewValue(c, path, opts...)
	if err != nil {
		return nil, err
	}
	return &Counter[T]{v: v}, nil
}

func size[T Integer]() int {
	var z T
	switch any(z).(type) {
	case int32:
		return 4
	default:
		return 8
	}
}

// encode returns n in Curator's format.
func encode[T Integer](n T) []byte {
	if size[T]() == 4 {
		return binary.BigEndian.AppendUint32(nil, uint32(n))
	}
	return binary.BigEndian.AppendUint64(nil, uint64(n))
}

// decode reads Curator's format: no data is 0; any length but the counter's is a
// *BadDataError.
func decode[T Integer](path string, b []byte) (T, error) {
	switch len(b) {
	case 0:
		return 0, nil
	case size[T]():
		if len(b) == 4 {
			return T(int32(binary.BigEndian.Uint32(b))), nil
		}
		return T(int64(binary.BigEndian.Uint64(b))), nil
	}
	return 0, &BadDataError{Path: path, Data: b, Want: size[T]()}
}

// Path returns the node's path.
func (c *Counter[T]) Path() string { return c.v.path }

// conv turns a result in bytes into one in T; bad data on either side is an error.
func (c *Counter[T]) conv(r Result[[]byte], err error) (Result[T], error) {
	out := Result[T]{Succeeded: r.Succeeded, Stats: r.Stats}
	var derr error
	out.Pre, derr = decode[T](c.v.path, r.Pre)
	if err == nil && derr != nil {
		err = derr
	}
	out.Post, derr = decode[T](c.v.path, r.Post)
	if err == nil && derr != nil {
		err = derr
	}
	return out, err
}

// Get reads the counter (0 when the node does not exist or holds no data).
func (c *Counter[T]) Get(ctx context.Context) (Result[T], error) { return c.conv(c.v.Get(ctx)) }

// Add adds delta (negative: subtracts), wrapping around on overflow as Java does.
func (c *Counter[T]) Add(ctx context.Context, delta T) (Result[T], error) {
	return c.conv(c.v.change(ctx, func(pre []byte) ([]byte, error) {
		n, err := decode[T](c.v.path, pre)
		if err != nil {
			return nil, err
		}
		return encode(n + delta), nil // wraps: Go's signed overflow is two's complement, as Java's
	}))
}

// Subtract subtracts delta.
func (c *Counter[T]) Subtract(ctx context.Context, delta T) (Result[T], error) {
	return c.Add(ctx, -delta)
}

// Increment adds 1.
func (c *Counter[T]) Increment(ctx context.Context) (Result[T], error) { return c.Add(ctx, 1) }

// Decrement subtracts 1.
func (c *Counter[T]) Decrement(ctx context.Context) (Result[T], error) { return c.Add(ctx, -1) }

// TrySet sets the counter to n: optimistically, then (WithPromotedToLock) under the lock.
func (c *Counter[T]) TrySet(ctx context.Context, n T) (Result[T], error) {
	return c.conv(c.v.TrySet(ctx, encode(n)))
}

// CompareAndSet sets the counter to n if it holds expected now, in one try. What it
// holds is read as Get reads it: a node with no data holds 0. A counter whose node does
// not exist is not changed.
func (c *Counter[T]) CompareAndSet(ctx context.Context, expected, n T) (Result[T], error) {
	return c.conv(c.v.compareAndSet(ctx, func(data []byte) (bool, error) {
		now, err := decode[T](c.v.path, data)
		return err == nil && now == expected, err
	}, encode(n)))
}

// ForceSet sets the counter to n whatever it holds, creating the node if needed.
func (c *Counter[T]) ForceSet(ctx context.Context, n T) error { return c.v.ForceSet(ctx, encode(n)) }

// Initialize creates the counter with n if it does not exist, and reports whether it did.
func (c *Counter[T]) Initialize(ctx context.Context, n T) (bool, error) {
	return c.v.Initialize(ctx, encode(n))
}
