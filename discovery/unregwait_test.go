package discovery_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// An Unregister whose context ends before its node is deleted deletes it in the
// background. A Register of the same id made meanwhile must not take that node as its
// own: the background delete (bounded by that node's czxid) would then remove the new
// registration's node, which its keeper makes again only later. It waits for the delete,
// as it waits for the cleanup of a failed Register, and makes its own node.
func TestRegisterAfterAnUnregisterGivenUpMakesItsOwnNode(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	var armed atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	hook := framework.WithRequestHook(func(op string) {
		if op == "delete" && armed.CompareAndSwap(true, false) {
			close(held)
			<-release // the delete of the Unregister given up is held here
		}
	})
	c := testutil.ConnectFailFast(t, server.ConnectString(), hook)
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	regs := newRegistrations()
	d, err := discovery.New[details](c, "/disc/unregwait", discovery.WithRegistrationListener(regs.listen))
	require.NoError(t, err)
	defer d.Close()
	const path = "/disc/unregwait/svc/x"

	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "x", 1)))
	first, err := other.Exists(ctx, path)
	require.NoError(t, err)
	require.NotNil(t, first)

	armed.Store(true)
	gone, cancelGone := context.WithCancel(ctx)
	cancelGone()
	unreg := testutil.Go(gone, func(ctx context.Context) error { return d.Unregister(ctx, newInstance(t, "svc", "x", 1)) })
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the Unregister sent no delete")
	}
	// The Unregister has usually returned by now (given up: its delete goes on in the
	// background, held at the hook); if its keeper was done before it looked at its
	// context, it deletes in the foreground and is still held. Either way the id is being
	// removed until the delete is over, and a Register of it must wait.
	again := testutil.Go(ctx, func(ctx context.Context) error { return d.Register(ctx, newInstance(t, "svc", "x", 2)) })
	var errAgain error
	returned := false
	select {
	case errAgain = <-again:
		returned = true // the defect: it returned while the old node's delete was held
	case <-time.After(3 * time.Second): // a bound on the wait, not an assertion
	}
	if returned {
		st, err := other.Exists(ctx, path)
		require.NoError(t, err)
		if assert.NotNil(t, st) {
			assert.Equal(t, first.Czxid, st.Czxid, "(the node is the one whose delete is held)")
		}
		assert.Fail(t, "the Register returned while the delete of the Unregister given up was under way: it took that registration's node", "%v", errAgain)
	}
	close(release)
	_ = testutil.Result(t, unreg, 30*time.Second, "the Unregister")
	if !returned {
		require.NoError(t, testutil.Result(t, again, 30*time.Second, "the second Register"))
	}
	st, err := other.Exists(ctx, path)
	require.NoError(t, err)
	require.NotNil(t, st, "the second registration's node is there")
	assert.NotEqual(t, first.Czxid, st.Czxid, "the second registration has its own node")
	require.NoError(t, d.Close())
	testutil.RequireNoChildren(t, server.ConnectString(), "/disc/unregwait/svc")
}
