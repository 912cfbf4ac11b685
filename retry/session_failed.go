package retry

import "time"

// SessionFailed returns a policy that retries exactly as p does, except that
// [Do] gives up at once, returning the error as it is, when the operation
// fails with zk.ErrSessionExpired: it is Curator's SessionFailedRetryPolicy.
// Use it where an expired session makes a retry pointless, such as work that
// relies on an ephemeral node or a watch that the expiry took away.
//
// The returned policy is safe for concurrent use if p is. A nil p never
// allows a retry.
func SessionFailed(p Policy) Policy {
	return sessionFailed{p: p}
}

// sessionFailed is the policy made by SessionFailed.
type sessionFailed struct {
	p Policy
}

// AllowRetry defers to the wrapped policy.
func (s sessionFailed) AllowRetry(retryCount int, elapsed time.Duration) (time.Duration, bool) {
	if s.p == nil {
		return 0, false
	}
	return s.p.AllowRetry(retryCount, elapsed)
}

// RetriesSessionExpiry returns false: that is the point of this policy.
func (sessionFailed) RetriesSessionExpiry() bool { return false }
