package discovery_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// Registered takes no context, so it must not wait on the network: while an Update's
// write hangs on a stalled connection, Registered answers at once (with the instance as
// last given), and Update still ends with its context.
func TestRegisteredDoesNotWaitForAWrite(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	// The keeper reads the node (and watches it) once after Register, holding the
	// registration's lock: the stall must come after its answer, or the Update below
	// waits for that lock, behind a read that hangs, and sends nothing.
	var reads atomic.Int32
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
		framework.WithRequestObserver(func(ri framework.RequestInfo) {
			if ri.Op == "getData" && ri.Path == "/disc/registered/svc/a" && ri.Err == nil {
				reads.Add(1)
			}
		}))
	ctx := testutil.Context(t, 60*time.Second)
	d, err := discovery.New[details](c, "/disc/registered")
	require.NoError(t, err)
	defer d.Close()
	inst := newInstance(t, "svc", "a", 1)
	require.NoError(t, d.Register(ctx, inst))
	require.Eventually(t, func() bool { return reads.Load() >= 2 }, 20*time.Second, 5*time.Millisecond,
		"the keeper's first read (after Register's) is answered")

	proxy.Stall()
	defer proxy.Heal()
	before := c.Requests()
	upd := newInstance(t, "svc", "a", 2)
	uctx, ucancel := context.WithCancel(ctx)
	defer ucancel()
	updated := testutil.Go(uctx, func(ctx context.Context) error { return d.Update(ctx, upd) })
	require.Eventually(t, func() bool { return c.Requests() > before }, 20*time.Second, 5*time.Millisecond,
		"the Update's write is sent (and hangs)")

	got := make(chan []*discovery.Instance[details], 1)
	go func() { got <- d.Registered() }()
	select {
	case regs := <-got:
		require.Len(t, regs, 1)
		assert.Equal(t, "a", regs[0].ID)
	case <-time.After(20 * time.Second):
		ucancel()
		<-got
		t.Fatal("Registered waited for an Update hanging on the network")
	}
	ucancel()
	assert.Error(t, testutil.Result(t, updated, 20*time.Second, "the Update, cancelled"))
	proxy.Heal()
	require.NoError(t, d.Unregister(ctx, upd))
}

// A Register whose context ends while its connection is stalled returns at once: the
// cleanup of what it may have made (here its create, held in the proxy and applied after
// the heal) goes on after it returned, counted by WaitGuaranteedDeletes, and leaves no
// node. (Before, it waited for its cleanup's 10 s bound, and gave up.)
func TestCancelledRegisterCleansUpAfterReturning(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	// The connection stalls as Register's create goes out (its look before it is
	// answered: a Register that sent nothing has nothing to clean up).
	var armed atomic.Bool
	createSent := make(chan struct{})
	hook := framework.WithRequestHook(func(op string) {
		if op == "create" && armed.CompareAndSwap(true, false) {
			proxy.Stall()
			close(createSent)
		}
	})
	// A long session: the stalled connection is not given up (recv timeout 40 s).
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second), hook)
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	d, err := discovery.New[details](c, "/disc/cancelled")
	require.NoError(t, err)
	defer d.Close()
	_, err = c.Exists(ctx, "/") // connected
	require.NoError(t, err)

	armed.Store(true)
	rctx, rcancel := context.WithCancel(ctx)
	registered := testutil.Go(rctx, func(ctx context.Context) error { return d.Register(ctx, newInstance(t, "svc", "x", 1)) })
	select {
	case <-createSent:
	case <-time.After(20 * time.Second):
		t.Fatal("Register's create is not sent")
	}
	rcancel()
	assert.ErrorIs(t, testutil.Result(t, registered, 30*time.Second, "the cancelled Register"), context.Canceled)

	wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = c.WaitGuaranteedDeletes(wctx)
	wcancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded,
		"the cancelled Register's cleanup was over when it returned: it waited on the stalled connection")

	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.NoError(t, other.Sync(ctx, "/"))
	st, err := other.Exists(ctx, "/disc/cancelled/svc/x")
	require.NoError(t, err)
	assert.Nil(t, st, "the cancelled Register's node is left")
}

// A registration that cannot make its node again (its node was deleted, and the service's
// parent now refuses creates) and is then closed leaves no watch on the server: the
// keeper's look at the missing node must not set one (ZooKeeper keeps a watch on a node
// that does not exist until it is created or the session ends).
func TestClosedKeeperLeavesNoWatchOnAMissingNode(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, server.ConnectString())
	admin := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	d, err := discovery.New[details](c, "/disc/nowatch")
	require.NoError(t, err)
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "x", 1)))

	// The parent refuses creates; the node goes: the keeper tries to make it again, fails.
	_, err = admin.SetACL(ctx, "/disc/nowatch/svc", zk.WorldACL(zk.PermRead|zk.PermDelete|zk.PermAdmin), -1)
	require.NoError(t, err)
	before := c.Requests()
	require.NoError(t, admin.Delete(ctx, "/disc/nowatch/svc/x"))
	require.Eventually(t, func() bool { return c.Requests() >= before+2 }, 20*time.Second, 5*time.Millisecond,
		"the keeper looks at the missing node and tries to make it again")
	require.NoError(t, d.Close())

	out, err := zktest.FourLetterWord(server.Addr(), "wchc", 5*time.Second)
	require.NoError(t, err)
	assert.NotContains(t, out, "/disc/nowatch/svc/x", "a watch is left on the missing node after Close (wchc):\n%s", out)
	_, err = admin.SetACL(ctx, "/disc/nowatch/svc", zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	require.NoError(t, admin.Delete(ctx, "/disc/nowatch", framework.WithChildren()))
}
