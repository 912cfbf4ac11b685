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

// An event fires only the watches set before it. A data watch is set; the
// node changes, and the event for it is held in the network while an exists watch on the
// node is being set: the server answers the exists read after the change (its Stat shows
// it) and sets a new watch. The held event then fires the old data watch, never the new
// exists watch, which fires at the next change; the client counts it as set meanwhile
// (the reconnect gate relies on that count).
func TestWatchNotFiredByEventBeforeItsRead(t *testing.T) {
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
	require.Equal(t, 1, c.Watches())

	proxy.HoldReplies()
	_, err = other.SetData(ctx, "/n", []byte("1"), -1) // its event to c is held
	require.NoError(t, err)
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
	require.Eventually(t, func() bool { return c.Watches() == 2 }, 30*time.Second, time.Millisecond,
		"the exists watch is not being set")
	proxy.Heal()
	var r res
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("ExistsW did not return")
	}
	require.NoError(t, r.err)
	require.NotNil(t, r.st)
	assert.EqualValues(t, 1, r.st.Version, "the exists read was answered after the change")
	testutil.WaitClosed(t, dataW.Done(), 10*time.Second, "the data watch set before the change")
	assert.Equal(t, zk.EventNodeDataChanged, dataW.Event().Type)
	assert.False(t, testutil.IsClosed(r.w.Done()), "the exists watch fired for a change its own read saw: %+v", r.w.Event())
	assert.Equal(t, 1, c.Watches(), "the exists watch is set and has not fired")
	assert.Equal(t, 1, framework.ZKWatchers(c, "/n"), "go-zookeeper holds the exists watch")

	_, err = other.SetData(ctx, "/n", []byte("2"), -1)
	require.NoError(t, err)
	testutil.WaitClosed(t, r.w.Done(), 10*time.Second, "the exists watch, at the next change")
	assert.Equal(t, zk.EventNodeDataChanged, r.w.Event().Type)
	assert.Equal(t, 0, c.Watches())
}
