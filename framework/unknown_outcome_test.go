package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// lostReply runs write while the proxy holds the servers' replies, waits until the write
// reached the server, and drops the connection: the write was applied, its answer lost,
// and the client sends it again on the same session once it reconnects.
func lostReply(t *testing.T, proxy *zktest.Proxy, write func() error) error {
	t.Helper()
	before := proxy.Forwarded()
	proxy.HoldReplies()
	done := make(chan error, 1)
	go func() { done <- write() }()
	require.Eventually(t, func() bool { return proxy.Forwarded() > before }, 30*time.Second, time.Millisecond,
		"the write did not reach the server")
	proxy.DropConnections()
	proxy.Heal()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("the write did not return")
		return nil
	}
}

// A write sent again after its answer was lost, whose retry then fails with the answer
// its own first attempt explains, says that its outcome is unknown, besides that answer.
func TestRetriedWriteOutcomeUnknown(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	err := lostReply(t, proxy, func() error { _, err := c.Create(ctx, "/plain", []byte("a")); return err })
	assert.ErrorIs(t, err, framework.ErrNodeExists, "the retry found the node the first attempt made")
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome)
	_, err = c.Create(ctx, "/plain", nil)
	assert.ErrorIs(t, err, framework.ErrNodeExists)
	assert.NotErrorIs(t, err, framework.ErrUnknownOutcome, "no retry: the node was there before")

	err = lostReply(t, proxy, func() error { _, err := c.SetData(ctx, "/plain", []byte("b"), 0); return err })
	assert.ErrorIs(t, err, framework.ErrBadVersion, "the retry found the version the first attempt made")
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome)
	_, err = c.SetData(ctx, "/plain", []byte("c"), 0)
	assert.ErrorIs(t, err, framework.ErrBadVersion)
	assert.NotErrorIs(t, err, framework.ErrUnknownOutcome)

	err = lostReply(t, proxy, func() error {
		_, err := c.Transaction(ctx, framework.CreateOp("/t1", nil, framework.Persistent, nil),
			framework.SetDataOp("/plain", []byte("d"), 1))
		return err
	})
	assert.ErrorIs(t, err, framework.ErrNodeExists, "the retry found the transaction's node")
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome)

	// An unversioned setData sent twice sets the same data twice: no unknown outcome.
	err = lostReply(t, proxy, func() error { _, err := c.SetData(ctx, "/plain", []byte("e"), -1); return err })
	assert.NoError(t, err)
	data, _, err := c.GetData(ctx, "/plain")
	require.NoError(t, err)
	assert.Equal(t, "e", string(data))
}

// A czxid-bounded delete of a node that does not exist sends only its read: a lost reply
// to that read cannot make its NoNode unknown. A plain delete whose answer was lost and
// whose retry finds no node is unknown (the first attempt may have deleted it).
func TestRetriedDeleteOutcome(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	err := lostReply(t, proxy, func() error { return c.Delete(ctx, "/never", framework.WithMaxCzxid(1<<40)) })
	assert.ErrorIs(t, err, framework.ErrNoNode)
	assert.NotErrorIs(t, err, framework.ErrUnknownOutcome, "no delete was sent")

	_, err = c.Create(ctx, "/gone", nil)
	require.NoError(t, err)
	err = lostReply(t, proxy, func() error { return c.Delete(ctx, "/gone") })
	assert.ErrorIs(t, err, framework.ErrNoNode, "the retry found the node the first attempt deleted")
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome)
}
