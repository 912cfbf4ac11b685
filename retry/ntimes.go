package retry

import (
	"fmt"
	"time"
)

// NTimes is Curator's RetryNTimes: it allows a fixed number of retries and
// sleeps the same time before each. It is immutable and safe for concurrent
// use.
type NTimes struct {
	n     int
	sleep time.Duration
}

// NewNTimes returns an [NTimes] that allows n retries (n+1 attempts in all)
// and sleeps for sleep before each. It returns an error matching
// [ErrInvalidArgument] if n or sleep is negative.
func NewNTimes(n int, sleep time.Duration) (*NTimes, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: retry count %d is negative", ErrInvalidArgument, n)
	}
	if sleep < 0 {
		return nil, fmt.Errorf("%w: sleep %v is negative", ErrInvalidArgument, sleep)
	}
	return &NTimes{n: n, sleep: sleep}, nil
}

// NewOneTime returns an [NTimes] that allows a single retry after sleeping
// for sleep: it is Curator's RetryOneTime. It returns an error matching
// [ErrInvalidArgument] if sleep is negative.
func NewOneTime(sleep time.Duration) (*NTimes, error) {
	return NewNTimes(1, sleep)
}

// AllowRetry allows retries 0 to n-1, each after the same sleep. It ignores
// elapsed.
func (p *NTimes) AllowRetry(retryCount int, _ time.Duration) (time.Duration, bool) {
	if retryCount >= p.n {
		return 0, false
	}
	return p.sleep, true
}
