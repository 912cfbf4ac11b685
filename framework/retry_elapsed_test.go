package framework_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// elapsedRecorder is a retry policy that records the elapsed times it is asked with and
// decides as its policy does.
type elapsedRecorder struct {
	p  retry.Policy
	mu sync.Mutex
	at []time.Duration
}

func (r *elapsedRecorder) AllowRetry(n int, elapsed time.Duration) (time.Duration, bool) {
	r.mu.Lock()
	r.at = append(r.at, elapsed)
	r.mu.Unlock()
	return r.p.AllowRetry(n, elapsed)
}

func (r *elapsedRecorder) asked() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.at...)
}

// retry.Policy.AllowRetry "is called for retry number retryCount ... with the time
// elapsed since the first attempt started", and UntilElapsed "allows retries ... as long
// as less than a given time has passed since the first attempt started"; the client's
// operations "run under a retry policy (package retry)". An operation whose first
// attempt waited the whole connection timeout for a connection has used that time: the
// policy is asked with it, and an UntilElapsed shorter than it allows no retry.
func TestRetryPolicyElapsedCountsFirstAttempt(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	until, err := retry.NewUntilElapsed(time.Second, 50*time.Millisecond)
	require.NoError(t, err)
	rec := &elapsedRecorder{p: until}
	const connTimeout = 2 * time.Second
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithRetryPolicy(rec),
		framework.WithConnectionTimeout(connTimeout), framework.WithSessionTimeout(30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	proxy.Refuse()
	proxy.DropConnections()
	require.Eventually(t, func() bool { return !c.State().IsConnected() }, 10*time.Second, time.Millisecond)
	start := time.Now()
	_, err = c.Exists(ctx, "/any")
	took := time.Since(start)
	asked := rec.asked()
	t.Logf("Exists: %v after %v; policy asked with elapsed %v", err, took, asked)
	require.ErrorIs(t, err, framework.ErrNotConnected)
	require.NotEmpty(t, asked)
	assert.GreaterOrEqual(t, asked[0], connTimeout-100*time.Millisecond,
		"the first retry is asked for with the time since the first attempt started (it waited %v for a connection)", connTimeout)
	assert.Less(t, took, 2*connTimeout-100*time.Millisecond,
		"UntilElapsed(1s) allows no retry once the first attempt took %v", connTimeout)
}
