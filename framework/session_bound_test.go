package framework_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// A request bound to a session (InSession) is sent in that session only: once the client
// holds another, a request not sent yet fails with ErrSessionChanged (nothing applied),
// and one whose first attempt went out and whose answer was lost with the connection is
// not sent again in the new session: ErrSessionChanged and ErrUnknownOutcome.
func TestInSessionNotSentInAnotherSession(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var stallOnSet atomic.Bool
	policy, err := retry.NewBoundedExponentialBackoff(20*time.Millisecond, 200*time.Millisecond, 100)
	require.NoError(t, err)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(2*time.Second), framework.WithRetryPolicy(policy),
		framework.WithRequestHook(func(op string) {
			if op == "setData" && stallOnSet.CompareAndSwap(true, false) {
				proxy.Stall() // the set goes out and is never answered
			}
		}))
	ctx := testutil.Context(t, time.Minute)
	p := "/in-session-" + time.Now().Format("150405.000000000")
	t.Cleanup(func() { _ = c.Delete(context.Background(), p) })
	gen, sid := c.Session()
	bound := framework.InSession(ctx, gen, sid)
	_, err = c.Create(bound, p, []byte("0"))
	require.NoError(t, err, "sent in the session it is bound to")

	stallOnSet.Store(true)
	done := testutil.Go(ctx, func(ctx context.Context) error {
		_, err := c.SetData(framework.InSession(ctx, gen, sid), p, []byte("1"), -1)
		return err
	})
	require.Eventually(t, func() bool { return c.Generation() != gen }, 30*time.Second, 20*time.Millisecond,
		"the client gives the session up")
	// The set held in the stalled connection reaches nothing once the server has ended
	// the old session (a client may give a session up before its server does).
	require.Eventually(t, func() bool {
		ids, err := zktest.TrackedSessions(srv.Addr())
		return err == nil && !slices.Contains(ids, sid)
	}, 30*time.Second, 20*time.Millisecond, "the server ends the old session")
	proxy.Heal() // the set is resent, if at all, in a new session
	err = testutil.Result(t, done, 30*time.Second, "SetData")
	t.Logf("SetData: %v", err)
	require.ErrorIs(t, err, framework.ErrSessionChanged)
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome, "the first attempt went out")
	data, _, err := c.GetData(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, "0", string(data), "not sent again in the new session")

	_, err = c.SetData(bound, p, []byte("2"), -1)
	require.ErrorIs(t, err, framework.ErrSessionChanged)
	assert.NotErrorIs(t, err, framework.ErrUnknownOutcome, "nothing went out")
	_, err = c.SetData(ctx, p, []byte("3"), -1)
	require.NoError(t, err, "an unbound request is sent in the new session")
}
