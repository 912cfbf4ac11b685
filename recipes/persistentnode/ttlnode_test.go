package persistentnode_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// A TTL ZooKeeper refuses whatever the server (under a millisecond, or over its maximum
// of 2^40-1 ms) is refused at construction, for a TTLNode and for a Node of a TTL mode.
func TestNewTTLOutOfRange(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	defer c.Close()
	for _, ttl := range []time.Duration{time.Microsecond, (1 << 40) * time.Millisecond} {
		_, err := persistentnode.NewTTL(c, "/t", ttl, nil)
		assert.ErrorIs(t, err, framework.ErrInvalidArgument, "NewTTL with TTL %v", ttl)
		_, err = persistentnode.New(c, "/t", nil, persistentnode.WithMode(framework.PersistentWithTTL), persistentnode.WithTTL(ttl))
		assert.ErrorIs(t, err, framework.ErrInvalidArgument, "New with TTL %v", ttl)
	}
	_, err = persistentnode.NewTTL(c, "/t", (1<<40-1)*time.Millisecond, nil)
	assert.NoError(t, err, "the maximum itself")
}

// The server refuses the TTL child (here: the container, someone else's, grants no
// CREATE; a server without extendedTypesEnabled refuses every TTL node likewise): the
// refusal reaches the caller, WaitForInitialCreate returns it, instead of nil with the
// refusal logged at Debug.
func TestTTLNodeWaitForInitialCreateReturnsRefusedTouch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/pn/ttl-refused"
	_, err := other.Create(ctx, path, nil, framework.WithParents(),
		framework.WithNodeACL(zk.WorldACL(zk.PermAll&^zk.PermCreate)))
	require.NoError(t, err)
	tn, err := persistentnode.NewTTL(c, path, time.Minute, []byte("d"))
	require.NoError(t, err)
	require.NoError(t, tn.Start())
	err = tn.WaitForInitialCreate(ctx)
	require.NoError(t, tn.Close())
	require.Error(t, err, "WaitForInitialCreate returned nil, but the server refused the TTL child")
	assert.ErrorIs(t, err, framework.ErrNoAuth)
	assert.NoError(t, ctx.Err(), "returned on the refusal, not at the context's end")
	require.NoError(t, other.Delete(ctx, "/pn", framework.WithChildren()))
}

// ttlChildMzxid reads the TTL child's Stat through c, failing the test on any error.
func ttlChildStat(t *testing.T, c *framework.Client, path string) *framework.Stat {
	t.Helper()
	_, st, err := c.GetData(testutil.Context(t, 10*time.Second), path)
	require.NoError(t, err, "reading the TTL child %s", path)
	return st
}

// A TTLNode touches its child every TTL/factor while started, and Close stops the
// touching: the child's mzxid advances while the node runs and stays put after Close
// (the doc: "Close stops touching the child ... and deletes neither").
func TestTTLNodeCloseStopsTouchingAndDeletesNeither(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/pn/ttl-touch"
	tn, err := persistentnode.NewTTL(c, path, 800*time.Millisecond, []byte("d"))
	require.NoError(t, err)
	require.NoError(t, tn.Start())
	require.NoError(t, tn.WaitForInitialCreate(ctx))
	first := ttlChildStat(t, other, tn.ChildPath())
	require.Eventually(t, func() bool { return ttlChildStat(t, other, tn.ChildPath()).Mzxid > first.Mzxid },
		10*time.Second, 20*time.Millisecond, "the child is touched again within a few TTL/2 periods")
	require.NoError(t, tn.Close())
	_, err = c.Exists(ctx, path) // a touch sent before Close is answered before this (one session's order)
	require.NoError(t, err)
	after := ttlChildStat(t, other, tn.ChildPath())
	time.Sleep(1200 * time.Millisecond) // three touch periods: no touch may come
	st, err := other.Exists(ctx, tn.ChildPath())
	require.NoError(t, err)
	if st != nil {
		assert.Equal(t, after.Mzxid, st.Mzxid, "the child was touched after Close")
	}
	cst, err := other.Exists(ctx, path)
	require.NoError(t, err)
	_ = cst // the container may be reaped by the server once its child's TTL passed
	require.NoError(t, other.Delete(ctx, "/pn", framework.WithChildren(), framework.Quietly()))
}

// The container deleted by someone else (child first) is made again by the TTLNode,
// and its child touched again: the node is kept, as the package promises.
func TestTTLNodeMakesContainerAndChildAgainAfterDeletion(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/pn/ttl-again"
	tn, err := persistentnode.NewTTL(c, path, 2*time.Second, []byte("d"))
	require.NoError(t, err)
	require.NoError(t, tn.Start())
	defer tn.Close()
	require.NoError(t, tn.WaitForInitialCreate(ctx))
	before := ttlChildStat(t, other, path)
	require.NoError(t, other.Delete(ctx, path, framework.WithChildren()))
	require.Eventually(t, func() bool {
		st, err := other.Exists(ctx, tn.ChildPath())
		return err == nil && st != nil
	}, 10*time.Second, 20*time.Millisecond, "the container and its child are made again")
	data, st, err := other.GetData(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, "d", string(data))
	assert.Greater(t, st.Czxid, before.Czxid, "a new container")
}

// Close during a touch in flight on a connection that hangs returns without waiting for
// the hung server; the touch already handed to the connection may still be applied once
// it is back (Close's doc says so: one more TTL for the child), but no touch follows it:
// the server deletes the child once its TTL passes, then the container.
func TestTTLNodeCloseDuringHungTouchReturnsAndTouchingStops(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var (
		mu    sync.Mutex
		armed bool
		sent  = make(chan struct{})
	)
	hook := func(op string) {
		mu.Lock()
		defer mu.Unlock()
		if armed && op == "setData" {
			armed = false
			close(sent)
		}
	}
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(hook),
		framework.WithSessionTimeout(20*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/pn/ttl-hung"
	tn, err := persistentnode.NewTTL(c, path, 2*time.Second, []byte("d"))
	require.NoError(t, err)
	require.NoError(t, tn.Start())
	require.NoError(t, tn.WaitForInitialCreate(ctx))
	proxy.Stall()
	mu.Lock()
	armed = true
	mu.Unlock()
	select {
	case <-sent:
	case <-ctx.Done():
		t.Fatal("no touch was sent")
	}
	closed := make(chan error, 1)
	go func() { closed <- tn.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		proxy.Heal()
		<-closed
		t.Fatal("Close waited on the hung connection for more than 5s")
	}
	proxy.Heal()
	// Once the connection is back, whatever the closed TTLNode sent has been answered
	// after a request of c's made now is (one session's requests are handled in order).
	_, err = c.Exists(ctx, path)
	require.NoError(t, err)
	// Touched every second, the child (TTL 2 s) would stay; untouched, the server's
	// reaper (every second here) deletes it a few seconds after its last write.
	require.Eventually(t, func() bool {
		st, err := other.Exists(ctx, tn.ChildPath())
		return err == nil && st == nil
	}, 30*time.Second, 50*time.Millisecond, "the child stays: it is still touched after Close returned")
	require.NoError(t, other.Delete(ctx, "/pn", framework.WithChildren(), framework.Quietly()))
}

// A TTLNode's listener may call Close (AddListener: "see Node.AddListener", whose fn
// "may call Close"): the Close from the listener returns, the TTLNode stops touching
// its child, and a Close from elsewhere returns too, leaving no goroutine.
func TestTTLNodeCloseFromListenerReturns(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/pn/ttl-listener"
	tn, err := persistentnode.NewTTL(c, path, 600*time.Millisecond, []byte("d"))
	require.NoError(t, err)
	closed := make(chan error, 1)
	tn.AddListener(func(persistentnode.Created) {
		select {
		case closed <- tn.Close():
		default:
		}
	})
	require.NoError(t, tn.Start())
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the Close called from the listener did not return")
	}
	done := make(chan error, 1)
	go func() { done <- tn.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("a Close after the listener's did not return")
	}
	_, err = c.Exists(ctx, path) // a touch sent before Close is answered before this (one session's order)
	require.NoError(t, err)
	st, err := other.Exists(ctx, path+"/"+persistentnode.DefaultChildNodeName)
	require.NoError(t, err)
	if st != nil {
		time.Sleep(900 * time.Millisecond) // three touch periods
		st2, err := other.Exists(ctx, path+"/"+persistentnode.DefaultChildNodeName)
		require.NoError(t, err)
		if st2 != nil {
			assert.Equal(t, st.Mzxid, st2.Mzxid, "the child was touched after Close")
		}
	}
	require.NoError(t, other.Delete(ctx, "/pn", framework.WithChildren(), framework.Quietly()))
}

// Close stops keeping the container node: a re-creation of the container (someone
// deleted it) sent on a connection that then hangs, and given up by Close, must not
// leave a container made after Close returned. (A container that never had a child is
// not reaped by the server: such a node would stay for good.)
func TestTTLNodeCloseDuringHungRecreationLeavesNoContainer(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed atomic.Bool
	sent := make(chan struct{})
	hook := framework.WithRequestHook(func(op string) {
		if op == "create" && armed.CompareAndSwap(true, false) {
			proxy.Stall() // the re-creation goes out into a connection that answers nothing
			close(sent)
		}
	})
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), hook, framework.WithSessionTimeout(30*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/pn/ttl-recreate"
	tn, err := persistentnode.NewTTL(c, path, time.Minute, []byte("d"))
	require.NoError(t, err)
	require.NoError(t, tn.Start())
	require.NoError(t, tn.WaitForInitialCreate(ctx))

	armed.Store(true)
	require.NoError(t, other.Delete(ctx, path, framework.WithChildren()))
	testutil.WaitClosed(t, sent, 20*time.Second, "the container's re-creation")
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
	assert.Nil(t, st, "the container was made again after Close returned, by a re-creation Close gave up on")
	require.NoError(t, other.Delete(ctx, "/pn", framework.WithChildren(), framework.Quietly()))
}

// Close during the first create of the container, sent on a connection that then hangs:
// once the connection is back and the client's cleanups are done, no container made by
// that create stays (it would never get a child, and the server never reaps a container
// that had none).
func TestTTLNodeCloseDuringHungFirstCreateLeavesNoContainer(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var armed atomic.Bool
	sent := make(chan struct{})
	hook := framework.WithRequestHook(func(op string) {
		if op == "create" && armed.CompareAndSwap(true, false) {
			proxy.Stall() // the first create goes out into a connection that answers nothing
			close(sent)
		}
	})
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), hook, framework.WithSessionTimeout(30*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	_, err := other.Create(ctx, "/pn", nil) // the parent is there: the stalled create is the container's
	require.NoError(t, err)
	const path = "/pn/ttl-first"
	tn, err := persistentnode.NewTTL(c, path, time.Minute, []byte("d"))
	require.NoError(t, err)
	armed.Store(true)
	require.NoError(t, tn.Start())
	testutil.WaitClosed(t, sent, 20*time.Second, "the container's first create")
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
	assert.Nil(t, st, "the container made by a first create Close gave up on stays")
	require.NoError(t, other.Delete(ctx, "/pn", framework.WithChildren(), framework.Quietly()))
}
