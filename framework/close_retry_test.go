package framework_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// sleepAsked is a retry policy that allows every retry after a long sleep and says when
// it was first asked: the operation is then about to sleep before its retry.
type sleepAsked struct {
	once  sync.Once
	asked chan struct{}
}

func (p *sleepAsked) AllowRetry(int, time.Duration) (time.Duration, bool) {
	p.once.Do(func() { close(p.asked) })
	return 10 * time.Minute, true
}

// Close wakes an operation sleeping between two attempts: it returns ErrClosed at once,
// as it does from every other wait, not after the policy's sleep.
func TestCloseWakesRetrySleep(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	policy := &sleepAsked{asked: make(chan struct{})}
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRetryPolicy(policy))
	// The operation's request reaches the server, its reply is held, its connection is
	// dropped: a connection loss, which the policy retries after its sleep.
	proxy.HoldReplies()
	defer proxy.Heal()
	before := proxy.Forwarded()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends the operation should Close not
	done := make(chan error, 1)
	go func() {
		_, _, err := c.GetData(ctx, "/")
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for proxy.Forwarded() == before {
		require.True(t, time.Now().Before(deadline), "the request never reached the server")
		time.Sleep(10 * time.Millisecond)
	}
	proxy.DropConnections()
	select {
	case <-policy.asked:
	case err := <-done:
		t.Fatalf("the operation returned before a retry: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the retry policy was never asked")
	}
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, framework.ErrClosed)
	case <-time.After(30 * time.Second):
		t.Fatal("the operation still sleeps before its retry 30 s after Close")
	}
}
