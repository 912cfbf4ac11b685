package retry

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// MaxExponentialRetries is the most retries an [ExponentialBackoff] allows;
// larger values given to its constructors are lowered to it, as Curator does.
// It keeps the random multiplier of the base sleep, below 2^(k+1) for retry
// k, within range.
const MaxExponentialRetries = 29

// ExponentialBackoff is Curator's ExponentialBackoffRetry and, with a maximum
// sleep, its BoundedExponentialBackoffRetry. It allows a fixed number of
// retries and sleeps before retry k (counting from 0)
//
//	base × max(1, r), r drawn uniformly from [0, 2^(k+1))
//
// lowered to the maximum sleep when one is set. The sleep thus lies between
// base and base × (2^(k+1) - 1), and its expected value roughly doubles with
// each retry.
//
// An ExponentialBackoff is immutable and safe for concurrent use, provided
// the random source given through [WithRand], if any, is.
type ExponentialBackoff struct {
	base       time.Duration
	maxSleep   time.Duration // 0: no maximum
	maxRetries int
	intN       func(n int) int
}

// Option configures an [ExponentialBackoff].
type Option func(*exponentialOptions)

type exponentialOptions struct {
	maxSleep time.Duration
	intN     func(n int) int
	err      error
}

// WithMaxSleep caps every sleep at d, which must be positive. The default is
// no cap.
func WithMaxSleep(d time.Duration) Option {
	return func(o *exponentialOptions) {
		if d <= 0 {
			o.err = fmt.Errorf("%w: max sleep %v is not positive", ErrInvalidArgument, d)
			return
		}
		o.maxSleep = d
	}
}

// WithRand sets the source of randomness: intN(n) must return a number in
// [0, n), as math/rand/v2's IntN does; numbers outside are brought to the
// nearest end. If the policy is shared between goroutines, intN must be safe
// for concurrent use. The default is math/rand/v2's IntN. A nil intN keeps
// the default.
func WithRand(intN func(n int) int) Option {
	return func(o *exponentialOptions) {
		if intN != nil {
			o.intN = intN
		}
	}
}

// defaultIntN is math/rand/v2's package-level source, which is safe for
// concurrent use.
func defaultIntN(n int) int { return rand.IntN(n) }

// NewExponentialBackoff returns an [ExponentialBackoff] that sleeps a random
// multiple of base before each retry and allows at most maxRetries retries
// (no more than [MaxExponentialRetries]). It returns an error matching
// [ErrInvalidArgument] if base is not positive, maxRetries is negative, or an
// option is invalid.
func NewExponentialBackoff(base time.Duration, maxRetries int, opts ...Option) (*ExponentialBackoff, error) {
	if base <= 0 {
		return nil, fmt.Errorf("%w: base sleep %v is not positive", ErrInvalidArgument, base)
	}
	if maxRetries < 0 {
		return nil, fmt.Errorf("%w: max retries %d is negative", ErrInvalidArgument, maxRetries)
	}
	o := exponentialOptions{intN: defaultIntN}
	for _, opt := range opts {
		opt(&o)
	}
	if o.err != nil {
		return nil, o.err
	}
	return &ExponentialBackoff{
		base:       base,
		maxSleep:   o.maxSleep,
		maxRetries: min(maxRetries, MaxExponentialRetries),
		intN:       o.intN,
	}, nil
}

// NewBoundedExponentialBackoff returns an [ExponentialBackoff] whose sleeps
// are capped at maxSleep: it is NewExponentialBackoff with
// [WithMaxSleep](maxSleep) added after opts. It returns an error matching
// [ErrInvalidArgument] if base or maxSleep is not positive, maxRetries is
// negative, or an option is invalid.
func NewBoundedExponentialBackoff(base, maxSleep time.Duration, maxRetries int, opts ...Option) (*ExponentialBackoff, error) {
	all := make([]Option, 0, len(opts)+1)
	all = append(all, opts...)
	all = append(all, WithMaxSleep(maxSleep))
	return NewExponentialBackoff(base, maxRetries, all...)
}

// AllowRetry allows retries 0 to maxRetries-1 and returns a random sleep
// that grows with retryCount; see [ExponentialBackoff]. It ignores elapsed.
func (e *ExponentialBackoff) AllowRetry(retryCount int, _ time.Duration) (time.Duration, bool) {
	if retryCount >= e.maxRetries {
		return 0, false
	}
	return e.sleep(retryCount), true
}

// sleep returns the sleep before retry k. It is defined, and does not
// overflow, for every k: k is taken as 0 when negative and as
// MaxExponentialRetries when larger, and a product too large for a Duration
// is lowered to the largest Duration.
func (e *ExponentialBackoff) sleep(k int) time.Duration {
	k = min(max(k, 0), MaxExponentialRetries)
	n := 1 << (k + 1) // at most 2^30, which fits in a 32-bit int
	r := min(max(e.intN(n), 1), n-1)
	var d time.Duration
	if int64(r) > math.MaxInt64/int64(e.base) {
		d = math.MaxInt64
	} else {
		d = e.base * time.Duration(r)
	}
	if e.maxSleep > 0 {
		d = min(d, e.maxSleep)
	}
	return d
}
