package discovery_test

import (
	"context"
	"errors"
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

// A Register cancelled while its create is held longer than the cleanup's 10 s
// bound. Its background cleanup gives up waiting for the create (r.creates.Wait with
// cleanupTimeout) and ends: WaitGuaranteedDeletes says all is clean while the create is
// still held, and once the connection heals the create is applied and its ephemeral node
// stays for the whole life of the session, registered by no one.
func TestCancelledRegisterHeldPastTheCleanupBoundLeavesNoNode(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	var armed atomic.Bool
	// The create's request reaches the server (and is applied); its reply, and every
	// reply after it, is held until Heal.
	hook := framework.WithRequestHook(func(op string) {
		if op == "create" && armed.CompareAndSwap(true, false) {
			proxy.HoldReplies()
		}
	})
	// A long session: the held connection is not given up (recv timeout 40 s).
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second), hook)
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	d, err := discovery.New[details](c, "/disc/cancelled-held")
	require.NoError(t, err)
	defer d.Close()
	_, err = other.Create(ctx, "/disc/cancelled-held/svc", nil, framework.WithParents())
	require.NoError(t, err)
	_, err = c.Exists(ctx, "/")
	require.NoError(t, err)

	armed.Store(true)
	rctx, rcancel := context.WithCancel(ctx)
	registered := testutil.Go(rctx, func(ctx context.Context) error { return d.Register(ctx, newInstance(t, "svc", "x", 1)) })
	// The create was applied on the server (its reply is held).
	require.Eventually(t, func() bool {
		st, err := other.Exists(ctx, "/disc/cancelled-held/svc/x")
		return err == nil && st != nil
	}, 20*time.Second, 5*time.Millisecond)
	rcancel()
	assert.ErrorIs(t, testutil.Result(t, registered, 30*time.Second, "the cancelled Register"), context.Canceled)

	// Hold past the cleanup's 10 s bound (a correct cleanup keeps waiting: either way is
	// fine here; what counts is the node afterwards).
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	err = c.WaitGuaranteedDeletes(wctx)
	wcancel()
	t.Logf("cleanup over before the heal: %v", err == nil)

	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	_, err = c.Exists(ctx, "/") // behind the held replies
	require.NoError(t, err)
	require.NoError(t, other.Sync(ctx, "/"))
	st, err := other.Exists(ctx, "/disc/cancelled-held/svc/x")
	require.NoError(t, err)
	assert.Nil(t, st, "the cancelled Register's ephemeral node is left for the session's life: its cleanup gave up waiting for the create after 10 s")
	if st != nil {
		assert.Equal(t, c.SessionID(), st.EphemeralOwner)
	}
	assert.Empty(t, d.Registered())
}

// Register must replace another session's ephemeral node at its path (Curator
// deletes it and creates its own; deleting needs only the parent's DELETE permission).
// The keeper's GetDataW needs READ on the node: a node whose ACL denies READ makes
// Register fail with NoAuth, where ExistsW (no ACL check) let it replace the node.
func TestRegisterReplacesAnUnreadableNode(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	other := testutil.Connect(t, connect, framework.WithAuth("digest", []byte("java:secret")))
	ctx := testutil.Context(t, 30*time.Second)
	d, err := discovery.New[details](c, "/disc/cancelled-acl")
	require.NoError(t, err)
	defer d.Close()
	// Another session (a Java service, say, whose client uses CREATOR_ALL_ACL) holds the id.
	_, err = other.Create(ctx, "/disc/cancelled-acl/svc", nil, framework.WithContainerParents())
	if err != nil && !errors.Is(err, framework.ErrNodeExists) {
		require.NoError(t, err)
	}
	_, err = other.Create(ctx, "/disc/cancelled-acl/svc/x", []byte("{}"), framework.WithMode(framework.Ephemeral),
		framework.WithNodeACL(zk.AuthACL(zk.PermAll)))
	require.NoError(t, err)

	err = d.Register(ctx, newInstance(t, "svc", "x", 1))
	require.NoError(t, err, "Register could not replace a node it may delete but not read")
	got, err := d.QueryForInstance(ctx, "svc", "x")
	if assert.NoError(t, err) {
		assert.Equal(t, "x", got.ID)
	}
}

// A Register cancelled with its create in flight cleans up in the background;
// the registration is out of the registry already, so the same id can be registered
// again on the same client at once. That Register (B) finds the cancelled one's node
// (our session's) and takes it as its own, with the cancelled call's data and no
// creation heard; the background cleanup then deletes it (its czxid bound is read from
// the node it finds, so it bounds nothing here), and B's keeper makes it again: B's
// instance goes away and comes back after B's Register returned, and until then its node
// holds the other call's data. Here: B's Register returns having heard no creation of its
// node, which is heard only later, from its keeper.
func TestReRegisterAfterACancelledRegisterIsNotUndone(t *testing.T) {
	leakcheck.Check(t)
	regs := newRegistrations()
	h := cancelRegisterWithHeldCreate(t, "/disc/cancelled-again", discovery.WithRegistrationListener(regs.listen))
	c, proxy, d, ctx := h.c, h.proxy, h.d, h.ctx

	before := c.Requests()
	second := testutil.Go(ctx, func(ctx context.Context) error { return d.Register(ctx, newInstance(t, "svc", "x", 2)) })
	// Let its first request go out (its reply held) before the heal; a Register that waits
	// for the cleanup sends none: this is a bound on the wait, not an assertion.
	deadline := time.Now().Add(5 * time.Second)
	for c.Requests() == before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	proxy.Heal()
	require.NoError(t, testutil.Result(t, second, 30*time.Second, "the second Register"))
	heard := len(regs.list())
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	// Settled: the node holds the second registration's data.
	require.Eventually(t, func() bool {
		got, err := d.QueryForInstance(ctx, "svc", "x")
		return err == nil && got.Port == 2
	}, 20*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, heard, "the second Register returned before its node was created (it took the cancelled call's node, with its data)")
	assert.Len(t, regs.list(), 1, "the second registration's node was made again after its Register returned: the cancelled call's cleanup deleted it (%v)", regs.list())
}
