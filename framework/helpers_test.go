package framework_test

import (
	"sync"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/framework"
)

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
