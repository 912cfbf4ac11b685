package retry

import (
	"fmt"
	"time"
)

// UntilElapsed is Curator's RetryUntilElapsed: it allows retries, each after
// the same sleep, as long as less than a given time has passed since the
// first attempt started. The last retry can thus start up to one sleep after
// that time. It is immutable and safe for concurrent use.
type UntilElapsed struct {
	maxElapsed time.Duration
	sleep      time.Duration
}

// NewUntilElapsed returns an [UntilElapsed] that allows a retry while less
// than maxElapsed has passed since the first attempt started, and sleeps for
// sleep before each. It returns an error matching [ErrInvalidArgument] if
// maxElapsed is not positive or sleep is negative.
func NewUntilElapsed(maxElapsed, sleep time.Duration) (*UntilElapsed, error) {
	if maxElapsed <= 0 {
		return nil, fmt.Errorf("%w: max elapsed time %v is not positive", ErrInvalidArgument, maxElapsed)
	}
	if sleep < 0 {
		return nil, fmt.Errorf("%w: sleep %v is negative", ErrInvalidArgument, sleep)
	}
	return &UntilElapsed{maxElapsed: maxElapsed, sleep: sleep}, nil
}

// AllowRetry allows a retry, after the fixed sleep, if elapsed is less than
// the maximum. It ignores retryCount.
func (p *UntilElapsed) AllowRetry(_ int, elapsed time.Duration) (time.Duration, bool) {
	if elapsed >= p.maxElapsed {
		return 0, false
	}
	return p.sleep, true
}
