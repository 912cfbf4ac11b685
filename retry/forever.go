package retry

import (
	"fmt"
	"time"
)

// Forever is Curator's RetryForever: it always allows a retry, each after the
// same sleep. Only the context given to [Do] ends the loop, so give it a
// deadline or cancel it. A Forever is immutable and safe for concurrent use.
type Forever struct {
	interval time.Duration
}

// NewForever returns a [Forever] that sleeps for interval before each retry.
// It returns an error matching [ErrInvalidArgument] if interval is not
// positive.
func NewForever(interval time.Duration) (*Forever, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("%w: interval %v is not positive", ErrInvalidArgument, interval)
	}
	return &Forever{interval: interval}, nil
}

// AllowRetry always allows a retry after the fixed interval.
func (p *Forever) AllowRetry(int, time.Duration) (time.Duration, bool) {
	return p.interval, true
}
