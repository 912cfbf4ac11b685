package framework_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/retry"
)

// fastRetry retries quickly, for tests.
func fastRetry(t testing.TB) retry.Policy {
	p, err := retry.NewBoundedExponentialBackoff(20*time.Millisecond, 200*time.Millisecond, 10)
	require.NoError(t, err)
	return p
}

// newClient connects a client for the test and closes it at cleanup.
func newClient(t testing.TB, connect string, opts ...framework.Option) *framework.Client {
	t.Helper()
	all := append([]framework.Option{
		framework.WithSessionTimeout(4 * time.Second),
		framework.WithConnectionTimeout(3 * time.Second),
		framework.WithRetryPolicy(fastRetry(t)),
	}, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Connect(ctx, connect, all...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// stateRecorder collects the states a listener hears.
type stateRecorder struct {
	mu     sync.Mutex
	states []framework.State
	signal chan struct{}
}

func recordStates(c *framework.Client) *stateRecorder {
	r := &stateRecorder{signal: make(chan struct{}, 100)}
	c.AddListener(func(s framework.State) {
		r.mu.Lock()
		r.states = append(r.states, s)
		r.mu.Unlock()
		select {
		case r.signal <- struct{}{}:
		default:
		}
	})
	return r
}

func (r *stateRecorder) get() []framework.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]framework.State(nil), r.states...)
}

// waitFor waits until the recorded states end with want.
func (r *stateRecorder) waitFor(t *testing.T, d time.Duration, want ...framework.State) {
	t.Helper()
	deadline := time.After(d)
	for {
		got := r.get()
		if len(got) >= len(want) {
			tail := got[len(got)-len(want):]
			match := true
			for i := range want {
				if tail[i] != want[i] {
					match = false
				}
			}
			if match {
				return
			}
		}
		select {
		case <-r.signal:
		case <-deadline:
			t.Fatalf("states %v do not end with %v after %v", got, want, d)
		}
	}
}
