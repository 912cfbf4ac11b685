package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/zktest"
)

// A consumer with a lock path cut off from ZooKeeper while its handler runs: the server
// ends its session, another worker takes the item (its lock node gone with the session)
// and finishes it, and the client reports Lost. Its handler then fails, and its context
// is cancelled. The lock's session is gone: nothing is left for the consumer to do on the
// cut-off connection, so ConsumeOne returns promptly after its context ended, and its
// error says what is known: the handler failed, the item was neither removed nor
// requeued by this consumer (no removal went out), and where it is is not known (another
// worker may have taken it): not "in the queue", nor "being removed".
func TestLockedConsumerLostWhileCutOffReturnsWithItsContext(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()))
	peer := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)
	base := uniq("/lostremoval")
	t.Cleanup(func() { _ = peer.Delete(context.Background(), base, framework.WithChildren()) })
	q, err := queue.New(c, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	pq, err := queue.New(peer, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	_, err = q.Put(ctx, "x")
	require.NoError(t, err)

	lost := make(chan struct{})
	var once sync.Once
	defer c.AddListener(func(s framework.State) {
		if s == framework.Lost {
			once.Do(func() { close(lost) })
		}
	})()
	t.Cleanup(proxy.Heal)
	errJob := errors.New("job failed")
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var peerErr error
	var peerGot []string
	var cancelled time.Time
	err = q.ConsumeOne(cctx, func(context.Context, string) error {
		proxy.Stall() // cut off
		// Another worker takes the item once the server ended the consumer's session,
		// and finishes it.
		peerErr = pq.ConsumeOne(ctx, func(_ context.Context, s string) error { peerGot = append(peerGot, s); return nil })
		select {
		case <-lost:
		case <-time.After(30 * time.Second):
		}
		cancel()
		cancelled = time.Now()
		return errJob
	})
	elapsed := time.Since(cancelled)
	proxy.Heal()
	require.NoError(t, peerErr)
	require.Equal(t, []string{"x"}, peerGot, "the other worker took the item")
	testutil.WaitClosed(t, lost, time.Second, "the consumer's client reported Lost")
	t.Logf("ConsumeOne returned %v after its context ended: %v", elapsed, err)
	assert.Less(t, elapsed, 10*time.Second, "ConsumeOne returned long after its context ended, its lock's session gone")
	require.ErrorIs(t, err, errJob)
	var he *queue.HandlerError
	require.ErrorAs(t, err, &he)
	assert.False(t, he.Requeued)
	assert.ErrorIs(t, err, queue.ErrNotRemoved)
	assert.NotContains(t, err.Error(), "being removed", "a failed handler's item is requeued, not removed")
	assert.NotContains(t, err.Error(), "not removed nor requeued: in the queue", "the item is not known to be in the queue (another worker took it)")
}
