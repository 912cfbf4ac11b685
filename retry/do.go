package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// DoOption configures a call of [Do].
type DoOption func(*doConfig)

type doConfig struct {
	timer  backoff.Timer
	clock  backoff.Clock
	notify func(err error, sleep time.Duration)
}

// WithTimer sets the timer that [Do] sleeps on between attempts; tests use it
// to avoid real sleeps. Do stops it before returning. A timer serves one call
// at a time: do not share it between concurrent calls. The default is a timer
// of package time; a nil timer keeps it.
func WithTimer(t backoff.Timer) DoOption {
	return func(c *doConfig) {
		if t != nil {
			c.timer = t
		}
	}
}

// WithClock sets the clock that measures the elapsed time passed to the
// policy. The default is backoff.SystemClock; a nil clock keeps it.
func WithClock(c backoff.Clock) DoOption {
	return func(cfg *doConfig) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// WithNotify sets a function that [Do] calls, on the goroutine that called
// Do, after each failed attempt that it will retry, with the attempt's error
// and the sleep before the next attempt; use it for logging. It is not called
// for the last failure. The default is none.
func WithNotify(f func(err error, sleep time.Duration)) DoOption {
	return func(c *doConfig) {
		c.notify = f
	}
}

// Do runs op, and retries it under p while it fails with a retryable
// ZooKeeper error: one for which [IsRetryable](err, [RetriesSessionExpiry](p))
// is true. Each attempt is passed ctx. A nil p means [Default]().
//
// Do returns nil as soon as op does. It returns op's error as it is, without
// wrapping, as soon as op fails with an error that is not retryable, such as
// zk.ErrNoNode or the context's own error. When p allows no further retry, it
// returns an error that matches both [ErrRetriesExhausted] and op's last
// error. If ctx is done before the first attempt, Do returns ctx.Err() and
// does not run op; if it is done later, Do returns, without waiting for the
// sleep to end, an error that matches both ctx.Err() and op's last error.
// It returns [ErrNilOperation] if op is nil.
//
// Do sleeps through backoff/v4 (backoff.RetryNotifyWithTimer) and starts no
// goroutine.
func Do(ctx context.Context, p Policy, op func(ctx context.Context) error, opts ...DoOption) error {
	if op == nil {
		return ErrNilOperation
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if p == nil {
		p = Default()
	}
	cfg := doConfig{clock: backoff.SystemClock}
	for _, opt := range opts {
		opt(&cfg)
	}

	var (
		retrySessionExpiry = RetriesSessionExpiry(p)
		last               error // op's last error
		final              error // set to end the loop with this error
	)
	pb := &policyBackOff{p: p, clock: cfg.clock}

	// backoff/v4 never sees op's errors, only these two values, so that
	// nothing op returns (a *backoff.PermanentError, say) can change how the
	// loop runs.
	attempt := func() error {
		if err := ctx.Err(); err != nil {
			// The timer fired but ctx is done too: do not run op again.
			final = cancelled(err, last)
			return backoff.Permanent(errStop)
		}
		err := op(ctx)
		if err == nil {
			return nil
		}
		last = err
		if !IsRetryable(err, retrySessionExpiry) {
			final = err
			return backoff.Permanent(errStop)
		}
		return errTryAgain
	}
	var notify backoff.Notify
	if cfg.notify != nil {
		notify = func(_ error, sleep time.Duration) { cfg.notify(last, sleep) }
	}

	if backoff.RetryNotifyWithTimer(attempt, backoff.WithContext(pb, ctx), notify, cfg.timer) == nil {
		return nil
	}
	switch {
	case final != nil:
		return final
	case pb.stopped:
		return fmt.Errorf("%w after %d retries: %w", ErrRetriesExhausted, pb.count-1, last)
	default:
		// backoff/v4 stopped because ctx is done, during the sleep or
		// just before it.
		return cancelled(ctx.Err(), last)
	}
}

var (
	errTryAgain = errors.New("retry: try again")
	errStop     = errors.New("retry: stop")
)

// cancelled returns the error of a loop cut short by the context error
// ctxErr, after op failed with last.
func cancelled(ctxErr, last error) error {
	return fmt.Errorf("retry: %w (last error: %w)", ctxErr, last)
}

// IsRetryable reports whether an operation that failed with err may be
// retried: whether err matches, through errors.Is, zk.ErrConnectionClosed,
// zk.ErrNoServer, zk.ErrSessionMoved, zk.ErrClosing, [ErrOperationTimeout]
// or, if retrySessionExpiry is true, zk.ErrSessionExpired, and does not match
// context.Canceled or context.DeadlineExceeded (so the error of a nested
// [Do] that was cancelled is not retried). A nil err is not retryable.
func IsRetryable(err error, retrySessionExpiry bool) bool {
	switch {
	case err == nil,
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.Is(err, zk.ErrConnectionClosed),
		errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrSessionMoved),
		errors.Is(err, zk.ErrClosing),
		errors.Is(err, ErrOperationTimeout):
		return true
	case errors.Is(err, zk.ErrSessionExpired):
		return retrySessionExpiry
	default:
		return false
	}
}
