package mutex_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// A first acquisition (no listing watch): the lease reads its node in the background.
// Before that read reaches the server, someone else deletes the node and makes a node of
// the same name again, another session's (one multi). The node the listing showed is
// gone: the lease must end lost, and its release say so. The read finds a node at the
// path, of another session and another czxid, and takes it for its own.
func TestPipelinedFirstReadOfAnotherSessionsNodeEndsLost(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed atomic.Bool
	held := make(chan struct{})
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithErrorPolicy(framework.SessionErrorPolicy),
		framework.WithRequestHook(func(op string) {
			if op == "getData" && armed.CompareAndSwap(true, false) {
				proxy.StallToServers() // the lease's read is held on its way to the server
				close(held)
			}
		}))
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/pipelined/firstread"
	m := newMutex(t, c, path)
	ctx := testutil.Context(t, 60*time.Second)
	armed.Store(true)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	testutil.WaitClosed(t, held, 10*time.Second, "the lease's read of its node")
	_, err = admin.Transaction(ctx,
		framework.DeleteOp(l.Node(), -1),
		framework.CreateOp(l.Node(), []byte("someone else's"), framework.Ephemeral, nil))
	require.NoError(t, err)
	proxy.Heal()
	testutil.WaitClosed(t, l.Done(), 10*time.Second, "Done after the holder's node was deleted (a node of its name made again by another session)")
	require.ErrorIs(t, l.Release(ctx), mutex.ErrLeaseLost)
}
