package retry

import "time"

// Policy decides whether to retry a failed operation and how long to sleep
// first. The implementations in this package hold no state and are safe for
// concurrent use; the one returned by [FromBackOff] is not.
type Policy interface {
	// AllowRetry is called for retry number retryCount (0-based: 0 is the
	// first retry, after the first failure) with the time elapsed since the
	// first attempt started. It returns how long to sleep before the retry
	// and whether to retry at all. A negative sleep counts as zero.
	AllowRetry(retryCount int, elapsed time.Duration) (sleep time.Duration, ok bool)
}

// Default sleeps before retry k (counting from 0) a random multiple of 100 ms
// between 1 and 2^(k+1)-1, capped at 5 s, and allows at most 10 retries: an
// [ExponentialBackoff] made by
//
//	NewBoundedExponentialBackoff(100*time.Millisecond, 5*time.Second, 10)
//
// Over its 10 retries it sleeps between 1 s and 30.7 s in total. The
// returned policy is safe for concurrent use.
func Default() Policy {
	return &ExponentialBackoff{
		base:       defaultBaseSleep,
		maxSleep:   defaultMaxSleep,
		maxRetries: defaultMaxRetries,
		intN:       defaultIntN,
	}
}

const (
	defaultBaseSleep  = 100 * time.Millisecond
	defaultMaxSleep   = 5 * time.Second
	defaultMaxRetries = 10
)

// sessionExpiryRetrier is implemented by policies that say whether an expired
// session is worth a retry; see SessionFailed.
type sessionExpiryRetrier interface {
	RetriesSessionExpiry() bool
}

// RetriesSessionExpiry reports whether [Do] retries an operation that failed
// with zk.ErrSessionExpired under p. It does unless p has a method
// RetriesSessionExpiry() bool that returns false, as the policies made by
// [SessionFailed] do.
func RetriesSessionExpiry(p Policy) bool {
	if r, ok := p.(sessionExpiryRetrier); ok {
		return r.RetriesSessionExpiry()
	}
	return true
}

// nonNegative turns a negative sleep into zero.
func nonNegative(d time.Duration) time.Duration {
	return max(d, 0)
}
