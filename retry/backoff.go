package retry

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// FromBackOff returns a policy that follows b: AllowRetry resets b when
// retryCount is 0, then allows a retry after b.NextBackOff(), unless that is
// backoff.Stop (or any negative duration). Time that b measures itself, as
// backoff.ExponentialBackOff's MaxElapsedTime does, thus starts at the first
// failure rather than at the first attempt.
//
// The returned policy changes b and is not safe for concurrent use: give each
// retry loop its own. A nil b never allows a retry. If b came from
// [ToBackOff], FromBackOff returns the original policy.
func FromBackOff(b backoff.BackOff) Policy {
	if pb, ok := b.(*policyBackOff); ok {
		return pb.p
	}
	return backOffPolicy{b: b}
}

// backOffPolicy is the policy made by FromBackOff.
type backOffPolicy struct {
	b backoff.BackOff
}

// AllowRetry asks the wrapped BackOff.
func (bp backOffPolicy) AllowRetry(retryCount int, _ time.Duration) (time.Duration, bool) {
	if bp.b == nil {
		return 0, false
	}
	if retryCount == 0 {
		bp.b.Reset()
	}
	d := bp.b.NextBackOff()
	if d < 0 {
		return 0, false
	}
	return d, true
}

// BackOffOption configures the backoff.BackOff made by [ToBackOff].
type BackOffOption func(*policyBackOff)

// WithBackOffClock sets the clock that measures the elapsed time passed to
// the policy. The default is backoff.SystemClock; a nil clock keeps it.
func WithBackOffClock(c backoff.Clock) BackOffOption {
	return func(pb *policyBackOff) {
		if c != nil {
			pb.clock = c
		}
	}
}

// ToBackOff returns a backoff.BackOff that follows p, for use wherever
// backoff/v4 expects one (backoff.Retry, backoff.NewTicker, ...). It counts
// retries and measures the time elapsed since its last Reset, which
// backoff.Retry calls before the first attempt, and passes both to
// p.AllowRetry; NextBackOff returns backoff.Stop when p allows no retry. A
// NextBackOff without a prior Reset starts the count and the clock.
//
// The returned BackOff is not safe for concurrent use: give each retry loop
// its own. A nil p never allows a retry. If p came from [FromBackOff],
// ToBackOff returns the original BackOff and ignores opts.
//
// The loops of backoff/v4 retry after every error. To retry only ZooKeeper
// errors worth retrying, use [Do], or wrap other errors with
// backoff.Permanent.
func ToBackOff(p Policy, opts ...BackOffOption) backoff.BackOff {
	if bp, ok := p.(backOffPolicy); ok && bp.b != nil {
		return bp.b
	}
	pb := &policyBackOff{p: p, clock: backoff.SystemClock}
	for _, opt := range opts {
		opt(pb)
	}
	return pb
}

// policyBackOff is the backoff.BackOff made by ToBackOff.
type policyBackOff struct {
	p       Policy
	clock   backoff.Clock
	started bool
	start   time.Time
	count   int  // calls of NextBackOff since the last Reset
	stopped bool // whether p has refused a retry since the last Reset
}

// Reset restarts the retry count and the clock.
func (pb *policyBackOff) Reset() {
	pb.started = true
	pb.start = pb.clock.Now()
	pb.count = 0
	pb.stopped = false
}

// NextBackOff asks the policy about the next retry.
func (pb *policyBackOff) NextBackOff() time.Duration {
	if !pb.started {
		pb.Reset()
	}
	if pb.p == nil {
		pb.stopped = true
		return backoff.Stop
	}
	sleep, ok := pb.p.AllowRetry(pb.count, pb.clock.Now().Sub(pb.start))
	pb.count++
	if !ok {
		pb.stopped = true
		return backoff.Stop
	}
	// A negative sleep must not be taken for backoff.Stop.
	return nonNegative(sleep)
}
