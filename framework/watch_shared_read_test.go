package framework_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A second caller that shares a watch set earlier must not
// get it back fired by an event for a change its own read saw. An exists watch is set on
// a missing node; the node is created and deleted, and the NodeCreated event for the
// first watch is held in the network while a second ExistsW shares that watch (it is set
// and has not fired, as far as the client knows) and sends its plain read, which the
// server answers after the create and the delete: "no node". The held event then fires
// the shared watch before that answer is handed over, and ExistsW returns "no node" with
// a watch that already fired with NodeCreated: a caller that takes NodeCreated for "it
// appeared after my read" (doublebarrier's Enter does) acts on a node that came and went
// before its read, and no watch is left on the server for the next change.
func TestSharedWatchNotFiredByEventBeforeItsRead(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.Connect(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(30*time.Second))
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testCtx(t)

	st, first, err := c.ExistsW(ctx, "/n")
	require.NoError(t, err)
	require.Nil(t, st)
	require.Equal(t, 1, c.Watches())

	proxy.HoldReplies()
	_, err = other.Create(ctx, "/n", nil) // its NodeCreated to c is held
	require.NoError(t, err)
	require.NoError(t, other.Delete(ctx, "/n"))
	sent := proxy.Forwarded()
	type res struct {
		st  *framework.Stat
		w   *framework.Watch
		err error
	}
	done := make(chan res, 1)
	go func() {
		st, w, err := c.ExistsW(ctx, "/n")
		done <- res{st, w, err}
	}()
	require.Eventually(t, func() bool { return proxy.Forwarded() > sent }, 30*time.Second, time.Millisecond,
		"the second ExistsW's read did not reach the server")
	proxy.Heal()
	var r res
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("ExistsW did not return")
	}
	require.NoError(t, r.err)
	require.Nil(t, r.st, "the read was answered after the create and the delete")
	testutil.WaitClosed(t, first.Done(), 10*time.Second, "the first watch, set before the create")
	assert.False(t, testutil.IsClosed(r.w.Done()),
		"ExistsW returned \"no node\" with a watch that had fired already, for a change its own read saw: %+v", r.w.Event())

	// The next create must fire the watch the second caller holds.
	_, err = other.Create(ctx, "/n", nil)
	require.NoError(t, err)
	testutil.WaitClosed(t, r.w.Done(), 10*time.Second, "the second caller's watch, at the next create")
}

// The goroutine that follows a watch whose request was in
// flight when an event for its node came (the read saw the change, so the watch waits
// for the next one on go-zookeeper's channel) ends when the client closes, and the watch
// fires with EventNotWatching then. leakcheck fails the test on a goroutine left behind.
func TestPendingWatchGoroutineEndsOnClose(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.Connect(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(30*time.Second))
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testCtx(t)

	_, err := c.Create(ctx, "/n", []byte("0"))
	require.NoError(t, err)
	_, _, dataW, err := c.GetDataW(ctx, "/n")
	require.NoError(t, err)
	proxy.HoldReplies()
	_, err = other.SetData(ctx, "/n", []byte("1"), -1) // its event to c is held
	require.NoError(t, err)
	sent := proxy.Forwarded()
	done := make(chan *framework.Watch, 1)
	go func() {
		_, w, err := c.ExistsW(ctx, "/n")
		assert.NoError(t, err)
		done <- w
	}()
	require.Eventually(t, func() bool { return proxy.Forwarded() > sent }, 30*time.Second, time.Millisecond)
	proxy.Heal()
	w := <-done
	testutil.WaitClosed(t, dataW.Done(), 10*time.Second, "the data watch")
	require.NotNil(t, w)
	require.False(t, testutil.IsClosed(w.Done()))
	require.Equal(t, 1, c.Watches())

	require.NoError(t, c.Close())
	testutil.WaitClosed(t, w.Done(), 10*time.Second, "the pending-followed exists watch, at Close")
	assert.Equal(t, zk.EventNotWatching, w.Event().Type)
	assert.Equal(t, 0, c.Watches())
}
