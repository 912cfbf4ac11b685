package atomic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
	"github.com/zoocurator/zoocurator/internal/versioned"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/retry"
)

// Stats says how a change went: Curator's AtomicStats.
type Stats struct {
	OptimisticTries int           // optimistic tries made
	PromotedTries   int           // tries made holding the promotion lock
	OptimisticTime  time.Duration // time spent in optimistic tries
	PromotedTime    time.Duration // time spent in promoted mode, waiting for the lock included
}

// Result is the outcome of a call: Curator's AtomicValue. When Succeeded is false, Post
// is the zero value, except with an error matching ErrUnknownOutcome, where it is the value
// that may have been written (with ErrNodeReplaced: the value that was written, to a node
// made again after Pre was read).
type Result[T any] struct {
	Succeeded bool
	Pre       T // the value before the change (the zero value for a node that did not exist)
	Post      T // the value after it
	Stats     Stats
}

// Value is Curator's DistributedAtomicValue: raw bytes in one node, changed atomically. It
// is safe for concurrent use.
type Value struct {
	client *framework.Client
	path   string
	opts   options
	lock   *mutex.Mutex // nil without WithPromotedToLock
}

// NewValue returns an atomic value at path. It checks its arguments but does not talk to
// ZooKeeper: a promotion lock path (WithPromotedToLock) at or below path is refused with
// an error matching framework.ErrInvalidArgument, as NewLong and NewInt refuse it.
func NewValue(c *framework.Client, path string, opts ...Option) (*Value, error) {
	if c == nil {
		return nil, fmt.Errorf("atomic: %w: nil client", framework.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("atomic: %w", err)
	}
	if path == "/" || framework.IsReservedPath(path) {
		return nil, fmt.Errorf("atomic: %w: %q cannot be a counter path", framework.ErrInvalidArgument, path)
	}
	o := options{policy: retry.Default()}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	v := &Value{client: c, path: path, opts: o}
	if o.promoted {
		if o.lockPolicy == nil {
			v.opts.lockPolicy = retry.Default()
		}
		if o.maxLockWait < 0 {
			return nil, fmt.Errorf("atomic: %w: negative lock wait %v", framework.ErrInvalidArgument, o.maxLockWait)
		}
		m, err := mutex.New(c, o.lockPath)
		if err != nil {
			return nil, fmt.Errorf("atomic: promotion lock: %w", err)
		}
		if o.lockPath == path || strings.HasPrefix(o.lockPath, path+"/") {
			// The lock's parents are made as containers: the counter's missing node would
			// be one of them, reaped by the server with the value once the lock is gone.
			return nil, fmt.Errorf("atomic: %w: promotion lock %q is at or below the counter's node %q", framework.ErrInvalidArgument, o.lockPath, path)
		}
		v.lock = m
	}
	return v, nil
}

// Path returns the node's path.
func (v *Value) Path() string { return v.path }

// makeFunc computes the new value from the current one (nil: no node).
type makeFunc func(pre []byte) ([]byte, error)

// Get reads the value (nil when the node does not exist). Succeeded is true unless it
// returns an error.
func (v *Value) Get(ctx context.Context) (Result[[]byte], error) {
	data, _, err := v.client.GetData(ctx, v.path)
	if errors.Is(err, framework.ErrNoNode) {
		return Result[[]byte]{Succeeded: true}, nil
	}
	if err != nil {
		return Result[[]byte]{}, fmt.Errorf("atomic: get %s: %w", v.path, err)
	}
	return Result[[]byte]{Succeeded: true, Pre: data, Post: data}, nil
}

// TrySet sets the value to b: optimistically, then (WithPromotedToLock) under the lock.
func (v *Value) TrySet(ctx context.Context, b []byte) (Result[[]byte], error) {
	nb := bytes.Clone(b)
	return v.change(ctx, func([]byte) ([]byte, error) { return nb, nil })
}

// CompareAndSet sets the value to b if it is expected now, in one try. A node that does
// not exist is not changed.
func (v *Value) CompareAndSet(ctx context.Context, expected, b []byte) (Result[[]byte], error) {
	return v.compareAndSet(ctx, func(data []byte) (bool, error) { return bytes.Equal(data, expected), nil }, b)
}

// compareAndSet sets the value to b if match says that what the node holds now is the
// value expected, in one try. A node that does not exist is not changed.
func (v *Value) compareAndSet(ctx context.Context, match func(data []byte) (bool, error), b []byte) (Result[[]byte], error) {
	var res Result[[]byte]
	data, st, err := v.client.GetData(ctx, v.path)
	if errors.Is(err, framework.ErrNoNode) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("atomic: get %s: %w", v.path, err)
	}
	res.Pre = data
	if ok, err := match(data); err != nil || !ok {
		return res, err
	}
	nb := bytes.Clone(b)
	_, err = versioned.SetDataOn(ctx, v.client, v.path, nb, st.Version, st.Czxid)
	switch {
	case err == nil:
		res.Succeeded, res.Post = true, nb
		return res, nil
	case errors.Is(err, versioned.ErrConflict):
		return res, nil
	case errors.Is(err, ErrUnknownOutcome):
		res.Post = nb
	}
	return res, fmt.Errorf("atomic: set %s: %w", v.path, err)
}

// ForceSet sets the value to b whatever it holds, creating the node if needed.
func (v *Value) ForceSet(ctx context.Context, b []byte) error {
	nb := bytes.Clone(b)
	_, err := versioned.SetData(ctx, v.client, v.path, nb, -1)
	if errors.Is(err, framework.ErrNoNode) {
		err = versioned.Create(ctx, v.client, v.path, nb)
		if errors.Is(err, framework.ErrNodeExists) { // created in between (perhaps by us): overwrite it
			_, err = versioned.SetData(ctx, v.client, v.path, nb, -1)
		}
	}
	if err != nil {
		return fmt.Errorf("atomic: force set %s: %w", v.path, err)
	}
	return nil
}

// Initialize creates the node with b if it does not exist, and reports whether it did.
func (v *Value) Initialize(ctx context.Context, b []byte) (bool, error) {
	err := versioned.Create(ctx, v.client, v.path, bytes.Clone(b))
	if errors.Is(err, versioned.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("atomic: initialize %s: %w", v.path, err)
	}
	return true, nil
}

// change runs the optimistic tries, then the promoted ones.
func (v *Value) change(ctx context.Context, mk makeFunc) (Result[[]byte], error) {
	var res Result[[]byte]
	start := time.Now()
	err := v.tries(ctx, &res, mk, v.opts.policy, &res.Stats.OptimisticTries)
	res.Stats.OptimisticTime = time.Since(start)
	if err != nil || res.Succeeded || v.lock == nil {
		return res, err
	}
	start = time.Now()
	err = v.promoted(ctx, &res, mk)
	res.Stats.PromotedTime = time.Since(start)
	return res, err
}

// promoted takes the promotion lock and makes the promoted tries under it.
func (v *Value) promoted(ctx context.Context, res *Result[[]byte], mk makeFunc) error {
	lctx, cancel := ctx, context.CancelFunc(func() {})
	if v.opts.maxLockWait > 0 {
		lctx, cancel = context.WithTimeout(ctx, v.opts.maxLockWait)
	}
	lease, err := v.lock.Acquire(lctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil // not locked within maxWait: not succeeded, as Curator
		}
		return fmt.Errorf("atomic: promotion lock %s: %w", v.opts.lockPath, err)
	}
	defer func() {
		// Released within ctx: the lock node's delete is guaranteed, so a delete that
		// ctx cuts short goes on in the client's background worker. Once ctx ended, the
		// whole release runs there (locks.Cleanup, bounded) and the call returns now.
		if ctx.Err() == nil {
			_ = lease.Release(ctx)
			return
		}
		locks.Cleanup(ctx, v.client, func(cctx context.Context) { _ = lease.Release(cctx) })
	}()
	return v.tries(ctx, res, mk, v.opts.lockPolicy, &res.Stats.PromotedTries)
}

// tries makes tries under p until one succeeds, p allows no more, or one ends in an
// error (an unknown outcome included: trying again could apply the change twice).
func (v *Value) tries(ctx context.Context, res *Result[[]byte], mk makeFunc, p retry.Policy, count *int) error {
	start := time.Now()
	for n := 0; ; n++ {
		*count++
		ok, err := v.tryOnce(ctx, res, mk)
		if err != nil || ok {
			return err
		}
		sleep, again := p.AllowRetry(n, time.Since(start))
		if !again {
			return nil
		}
		if err := v.sleep(ctx, sleep); err != nil {
			return err
		}
	}
}

func (v *Value) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-v.client.Done():
		return framework.ErrClosed
	}
}

// tryOnce reads the node, computes the new value and writes it conditionally: a versioned
// setData, or a create when there was no node. It reports false (and no error) when
// someone else got in between.
func (v *Value) tryOnce(ctx context.Context, res *Result[[]byte], mk makeFunc) (bool, error) {
	data, st, err := v.client.GetData(ctx, v.path)
	exists := true
	if errors.Is(err, framework.ErrNoNode) {
		data, exists = nil, false
	} else if err != nil {
		return false, fmt.Errorf("atomic: get %s: %w", v.path, err)
	}
	res.Pre, res.Post = data, nil
	nv, err := mk(data)
	if err != nil {
		return false, err
	}
	if exists {
		// Bound to the node read: one made again since (at the same version) is not it.
		_, err = versioned.SetDataOn(ctx, v.client, v.path, nv, st.Version, st.Czxid)
	} else {
		err = versioned.CreateOnce(ctx, v.client, v.path, nv)
	}
	switch {
	case err == nil:
		res.Succeeded, res.Post = true, nv
		return true, nil
	case errors.Is(err, versioned.ErrConflict):
		return false, nil
	case errors.Is(err, ErrUnknownOutcome):
		res.Post = nv
	}
	return false, fmt.Errorf("atomic: set %s: %w", v.path, err)
}
