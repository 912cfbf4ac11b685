package persistentnode_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// Close after the container was made but before its child was first touched (the first
// touch goes out on a connection that then hangs, and Close does not wait for it) must
// not leave the container for good. Close's doc: it "deletes neither: as Curator's, the
// server deletes the child once its TTL passes without a touch, then the container once
// it has no child". But the server reaps only a container that had a child (cversion >
// 0): one that never had a child stays until someone deletes it, which is why Close
// deletes the container of a create it gave up on. The container made here, carrying
// this TTLNode's owner token and never given a child, is neither deleted by Close nor
// ever reaped by the server.
func TestTTLNodeCloseBeforeFirstTouchLeavesNoContainer(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed atomic.Bool
	sent := make(chan struct{})
	hook := framework.WithRequestHook(func(op string) {
		// The first setData is the first touch (the container's create writes its data
		// itself): it goes out into a connection that answers nothing.
		if op == "setData" && armed.CompareAndSwap(true, false) {
			proxy.Stall()
			close(sent)
		}
	})
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), hook, framework.WithSessionTimeout(30*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	_, err := other.Create(ctx, "/pn", nil)
	require.NoError(t, err)
	const path = "/pn/ttl-untouched"
	tn, err := persistentnode.NewTTL(c, path, 2*time.Second, []byte("d"))
	require.NoError(t, err)
	armed.Store(true)
	require.NoError(t, tn.Start())
	testutil.WaitClosed(t, sent, 20*time.Second, "the first touch")
	closed := make(chan error, 1)
	go func() { closed <- tn.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(15 * time.Second): // a bound on the wait, not an assertion
		proxy.Heal()
		require.NoError(t, <-closed)
	}
	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	_, err = c.Exists(ctx, "/pn") // every request c sent before has been answered
	require.NoError(t, err)
	st, err := other.Exists(ctx, path)
	require.NoError(t, err)
	if st != nil {
		// The server's container reaper (every second here) deletes an empty container
		// only when its cversion is above 0; this one is left for good otherwise.
		require.Truef(t, st.Cversion > 0 || st.NumChildren > 0,
			"Close left the container %s it made, which never had a child (cversion %d, %d children): the server never reaps it",
			path, st.Cversion, st.NumChildren)
	}
	require.NoError(t, other.Delete(ctx, "/pn", framework.WithChildren(), framework.Quietly()))
}
