package discovery_test

import (
	"context"
	"github.com/go-zookeeper/zk"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// stalledRegistry is a ServiceDiscovery at base whose client (a 30 s session) reaches the
// server through a proxy, with svc/<id> registered (Dynamic) and the keeper's first read
// answered: a stall of the proxy from here on holds only what the test does next.
type stalledRegistry struct {
	proxy *zktest.Proxy
	c     *framework.Client
	other *framework.Client
	d     *discovery.ServiceDiscovery[details]
	inst  *discovery.Instance[details]
	path  string
	ctx   context.Context
}

func newStalledRegistry(t *testing.T, base, id string) *stalledRegistry {
	t.Helper()
	server := zktest.NewServer(t)
	s := &stalledRegistry{proxy: zktest.NewProxy(t, server.ConnectString()), path: base + "/svc/" + id}
	var reads atomic.Int32
	s.c = testutil.ConnectFailFast(t, s.proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
		framework.WithRequestObserver(func(ri framework.RequestInfo) {
			if ri.Op == "getData" && ri.Path == s.path && ri.Err == nil {
				reads.Add(1)
			}
		}))
	s.other = testutil.Connect(t, server.ConnectString())
	s.ctx = testutil.Context(t, 90*time.Second)
	d, err := discovery.New[details](s.c, base)
	require.NoError(t, err)
	t.Cleanup(func() { s.proxy.Heal(); _ = d.Close() })
	s.d = d
	s.inst = newInstance(t, "svc", id, 1)
	require.NoError(t, d.Register(s.ctx, s.inst))
	require.Eventually(t, func() bool { return reads.Load() >= 2 }, 20*time.Second, 5*time.Millisecond,
		"the keeper's first read (after Register's) is answered")
	return s
}

// Every blocking call honours its context (common brief; REFERENCE "A write the caller
// gave up on"): an Unregister with a 500 ms context on a stalled connection must return
// soon after its context ends, its delete going on in the background as the doc says
// ("a guaranteed delete: one that fails for a connection-class reason goes on in the
// background"). deleteNode runs on context.WithoutCancel(ctx) bounded by cleanupTimeout
// (10 s), so the caller waits those 10 s whatever its context says.
func TestUnregisterReturnsWithItsContextOnAStalledConnection(t *testing.T) {
	leakcheck.Check(t)
	s := newStalledRegistry(t, "/disc/r28-unreg-ctx", "a")
	s.proxy.Stall()
	uctx, ucancel := context.WithTimeout(s.ctx, 500*time.Millisecond)
	defer ucancel()
	start := time.Now()
	done := testutil.Go(s.ctx, func(context.Context) error { return s.d.Unregister(uctx, s.inst) })
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Unregister did not return within 30 s")
	}
	took := time.Since(start)
	t.Logf("Unregister with a 500 ms context on a stalled connection returned after %v: %v", took.Round(time.Millisecond), err)
	assert.Less(t, took, 3*time.Second, "Unregister returns soon after its context ends (500 ms)")
	s.proxy.Heal()
}

// A registration Unregister or Close gave up on must not stay registered: the doc promises
// a guaranteed delete (one that fails for a connection-class reason goes on in the
// background). With the connection stalled for the whole call, the cleanup's Sync (or
// GetData) fails, deleteNode returns that error for a Dynamic node without deleting
// anything and without handing the delete to the background, and the registration is
// already forgotten: once the connection is back, the ephemeral node stays as long as the
// client's session, every provider keeps handing the instance out, and nothing deletes it.
func TestUnregisterOrCloseDuringAStallLeavesNoNode(t *testing.T) {
	for _, how := range []string{"Unregister", "Close"} {
		t.Run(how, func(t *testing.T) {
			leakcheck.Check(t)
			s := newStalledRegistry(t, "/disc/r28-left-"+how, "a")
			s.proxy.Stall()
			var err error
			if how == "Unregister" {
				uctx, ucancel := context.WithTimeout(s.ctx, 500*time.Millisecond)
				err = s.d.Unregister(uctx, s.inst)
				ucancel()
			} else {
				err = s.d.Close()
			}
			t.Logf("%s during the stall: %v", how, err)
			s.proxy.Heal()
			// The session lived on (30 s timeout): nothing expired the node. A background
			// delete has 15 s to be done once the connection is back.
			deadline := time.Now().Add(15 * time.Second)
			var st *framework.Stat
			for time.Now().Before(deadline) {
				st, err = s.other.Exists(s.ctx, s.path)
				require.NoError(t, err)
				if st == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if st != nil {
				assert.Failf(t, "the node is left", "%s's registration is forgotten but its node %s (owner 0x%x, the client's live session 0x%x) is still there 15 s after the connection came back",
					how, s.path, st.EphemeralOwner, s.c.SessionID())
			}
			require.NoError(t, s.d.Close())
		})
	}
}

// An Update that finds its registration between the keeper's create of the node again
// and the keeper's read-back of it (the read failed: a connection loss) returns nil
// without writing ("being created: the keeper writes the new data", czxid 0), and the
// keeper, reading the node back later, finds the bytes of its create (the old data),
// takes the node for its own and keeps it: the update is never written, although Update
// reported success and Registered shows it. The doc promises that an Update of a node that
// is gone or being made goes into the node "when the keeper makes it again".
func TestUpdateWhileTheKeepersReadBackFailedIsWritten(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	const base = "/disc/r28-upd-readback"
	path := base + "/svc/a"
	var armed, created atomic.Bool
	held := make(chan struct{})
	hook := framework.WithRequestHook(func(op string) {
		if !armed.Load() {
			return
		}
		switch {
		case op == "create":
			created.Store(true)
		case op == "getData" && created.Load() && armed.CompareAndSwap(true, false):
			proxy.HoldReplies() // the keeper's read-back of the node it just made again
			close(held)
		}
	})
	once, err := retry.NewNTimes(1, 10*time.Millisecond)
	require.NoError(t, err)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
		framework.WithRetryPolicy(once), hook)
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	defer proxy.Heal()
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "a", 1)))

	armed.Store(true)
	require.NoError(t, other.Delete(ctx, path)) // the keeper makes it again
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the keeper did not make the node again and read it back")
	}
	// The keeper's read-back fails: the connection drops and cannot come back for now.
	proxy.Refuse()
	proxy.DropConnections()
	// Blocked on the registration's lock until the keeper's ensure failed, then no request.
	require.NoError(t, d.Update(ctx, newInstance(t, "svc", "a", 2)), "Update (port 2)")
	proxy.Heal()

	var port int
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		data, _, err := other.GetData(ctx, path)
		if err == nil {
			inst, err := discovery.Unmarshal[details](data)
			require.NoError(t, err)
			if port = inst.Port; port == 2 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, 2, port, "the node holds the update that returned nil, 15 s after the connection came back (Registered says port %d)", d.Registered()[0].Port)
}

// Register's doc: "On error nothing is registered and any node this call created is
// deleted." A DynamicSequential Register cancelled while its create is held (applied on
// the server, its reply not in) has no path yet (the sequence number is in the reply):
// its cleanup (deleteNode) returns at once on r.path == "" and deletes nothing, and the
// ephemeral-sequential node stays for the session's life, registered by no one, and every
// provider hands the instance out.
func TestCancelledSequentialRegisterLeavesNoNode(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	var armed atomic.Bool
	hook := framework.WithRequestHook(func(op string) {
		if op == "create" && armed.CompareAndSwap(true, false) {
			proxy.HoldReplies()
		}
	})
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second), hook)
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/r28-seq-held"
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	_, err = other.Create(ctx, base+"/svc", nil, framework.WithParents())
	require.NoError(t, err)
	_, err = c.Exists(ctx, "/")
	require.NoError(t, err)

	armed.Store(true)
	rctx, rcancel := context.WithCancel(ctx)
	registered := testutil.Go(rctx, func(ctx context.Context) error {
		return d.Register(ctx, newInstance(t, "svc", "seq-", 1, discovery.WithServiceType(discovery.DynamicSequential)))
	})
	require.Eventually(t, func() bool {
		kids, _, err := other.Children(ctx, base+"/svc")
		return err == nil && len(kids) == 1
	}, 20*time.Second, 5*time.Millisecond, "the create is applied (its reply held)")
	rcancel()
	assert.ErrorIs(t, testutil.Result(t, registered, 30*time.Second, "the cancelled Register"), context.Canceled)

	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	_, err = c.Exists(ctx, "/") // behind the held replies
	require.NoError(t, err)
	require.NoError(t, other.Sync(ctx, "/"))
	kids, _, err := other.Children(ctx, base+"/svc")
	require.NoError(t, err)
	assert.Empty(t, kids, "the cancelled DynamicSequential Register's node is left (session 0x%x)", c.SessionID())
	assert.Empty(t, d.Registered())
}

// Register's doc: a node already at the path is replaced ("a persistent one is
// overwritten"); "the registration that lost the node then watches it and takes the path
// again only once it is free; its Unregister or Close leaves the node alone", and
// Update's: "when ... another registration of the id holds the path (the last
// registration wins), nothing is written". For Static (and Permanent) the second Register
// overwrites the node with SetData and takes its czxid for its own, so both registrations
// own the same czxid: the first one's Update writes into the winner's node, and its
// Unregister deletes the winner's node (the winner's keeper then makes a new one).
func TestStaticLoserLeavesTheWinnersNode(t *testing.T) {
	for _, how := range []string{"Update", "Unregister", "Close"} {
		t.Run(how, func(t *testing.T) {
			leakcheck.Check(t)
			connect := shared(t)
			c1 := testutil.Connect(t, connect)
			c2 := testutil.Connect(t, connect)
			ctx := testutil.Context(t, 60*time.Second)
			base := "/disc/r28-static-loser-" + how
			d1, err := discovery.New[details](c1, base)
			require.NoError(t, err)
			defer d1.Close()
			d2, err := discovery.New[details](c2, base)
			require.NoError(t, err)
			defer d2.Close()
			static := discovery.WithServiceType(discovery.Static)
			first := newInstance(t, "svc", "s", 1, static)
			require.NoError(t, d1.Register(ctx, first))
			require.NoError(t, d2.Register(ctx, newInstance(t, "svc", "s", 2, static)))
			got, err := d2.QueryForInstance(ctx, "svc", "s")
			require.NoError(t, err)
			require.Equal(t, 2, got.Port, "the second Register overwrote the node (the last registration wins)")
			before, err := c2.Exists(ctx, base+"/svc/s")
			require.NoError(t, err)

			switch how {
			case "Update":
				_ = d1.Update(ctx, newInstance(t, "svc", "s", 7, static))
			case "Unregister":
				require.NoError(t, d1.Unregister(ctx, first))
			case "Close":
				require.NoError(t, d1.Close())
			}
			var after *framework.Stat
			require.Eventually(t, func() bool {
				after, err = c2.Exists(ctx, base+"/svc/s")
				return err == nil && after != nil
			}, 10*time.Second, 5*time.Millisecond, "the winner's node is there")
			assert.Equal(t, before.Czxid, after.Czxid, "the winner's node is still the one it had (czxid): the loser's %s deleted it", how)
			got, err = d2.QueryForInstance(ctx, "svc", "s")
			require.NoError(t, err)
			assert.Equal(t, 2, got.Port, "the winner's node holds the winner's data: the loser's %s wrote into it", how)
			require.NoError(t, d1.Close())
			require.NoError(t, d2.Close())
			_ = c2.Delete(ctx, base+"/svc/s")
		})
	}
}

// The doc: the node holds "the instance's JSON exactly as Curator's JsonInstanceSerializer
// writes it". Jackson writes U+2028 and U+2029 as they are and a control character as
// \u00XX with upper-case hex digits (\u001F); Go's encoder escapes U+2028/U+2029 (even
// with SetEscapeHTML(false)) and writes \u001f. A node Curator wrote with such
// characters in its strings must be what Go writes for the same instance.
func TestInteropLineSeparatorAndControlCharactersAsJacksonWritesThem(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	ctx := testutil.Context(t, 120*time.Second)
	java := curatortest.Start(t, connect)
	c := testutil.Connect(t, connect)
	const base = "/disc/r28-interop-ls"
	_, err := java.Do(ctx, "disc.new jd %s details", base)
	require.NoError(t, err)
	ans, err := java.Do(ctx, "disc.register jd svc host 8080 - DYNAMIC - line\u2028para\u2029unit\x1fsep k=v")
	require.NoError(t, err)
	fromJava := decodeJava[details](t, ans)[0]
	require.Equal(t, "line\u2028para\u2029unit\x1fsep", fromJava.Payload.Description, "the description reached Curator as given")
	raw, _, err := c.GetData(ctx, base+"/svc/"+fromJava.ID)
	require.NoError(t, err)
	mine, err := fromJava.Marshal()
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(mine), "Go writes the bytes Curator writes")
	_, err = java.Do(ctx, "disc.close jd")
	require.NoError(t, err)
	testutil.RequireNoChildren(t, connect, base+"/svc")
}

// cleanupTimeout (10 s) "bounds the deletes of Unregister and Close": Close gives all its
// unregisters one 10 s context, but each deleteNode makes a fresh 10 s bound from
// context.WithoutCancel of it, so on a stalled connection Close with three registrations
// blocks for 30 s, not 10.
func TestCloseOnAStalledConnectionIsBoundedOnce(t *testing.T) {
	leakcheck.Check(t)
	s := newStalledRegistry(t, "/disc/r28-close-bound", "a")
	for _, id := range []string{"b", "c"} {
		require.NoError(t, s.d.Register(s.ctx, newInstance(t, "svc", id, 1)))
	}
	s.proxy.Stall()
	start := time.Now()
	err := s.d.Close()
	took := time.Since(start)
	t.Logf("Close of three registrations on a stalled connection took %v: %v", took.Round(time.Millisecond), err)
	assert.Less(t, took, 15*time.Second, "Close's deletes share one cleanupTimeout (10 s)")
	s.proxy.Heal()
}

// A cache (and so a provider) started with a 500 ms context on a stalled connection
// returns soon after its context ends.
func TestCacheStartReturnsWithItsContextOnAStalledConnection(t *testing.T) {
	leakcheck.Check(t)
	s := newStalledRegistry(t, "/disc/r28-cache-start", "a")
	p, err := discovery.NewProvider(s.d, "svc")
	require.NoError(t, err)
	s.proxy.Stall()
	sctx, scancel := context.WithTimeout(s.ctx, 500*time.Millisecond)
	defer scancel()
	start := time.Now()
	err = p.Start(sctx)
	took := time.Since(start)
	t.Logf("Start: %v after %v", err, took.Round(time.Millisecond))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, took, 3*time.Second, "Start returns soon after its context ends (500 ms)")
	_, err = p.GetInstance()
	assert.Error(t, err, "a provider whose Start failed hands nothing out")
	start = time.Now()
	require.NoError(t, p.Close())
	assert.Less(t, time.Since(start), 3*time.Second, "the provider's Close does not wait on the stalled connection")
	s.proxy.Heal()
}

// The replacement of this registration's node of a session given up deletes
// the node by its version in the transaction (replace: DeleteOp(path, st.Version)), not by
// the czxid it just read: when another registration of the id (another process) replaces
// the node between the keeper's read and its transaction, the new node has version 0 as
// ours had, and the keeper's transaction deletes the other registration's node and puts
// its own back. The doc: the registration that lost the node (here ours: the other
// Register came last) "watches it and takes the path again only once it is free".
func TestDeadGenerationReplacementSparesANewerRegistration(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	var armed atomic.Bool
	reached, release := make(chan struct{}), make(chan struct{})
	multiDone := make(chan error, 1)
	var watching atomic.Bool
	c := testutil.ConnectFailFast(t, server.ConnectString(), framework.WithSessionTimeout(40*time.Second),
		framework.WithSimulatedExpiry(0.05), framework.WithDialer(proxy.Dialer()),
		framework.WithRequestHook(func(op string) {
			if op == "multi" && armed.CompareAndSwap(true, false) {
				watching.Store(true)
				close(reached)
				<-release // the keeper's replacement waits here, after its read
			}
		}),
		framework.WithRequestObserver(func(ri framework.RequestInfo) {
			if ri.Op == "multi" && watching.CompareAndSwap(true, false) {
				multiDone <- ri.Err
			}
		}))
	c2 := testutil.Connect(t, server.ConnectString())
	states := testutil.States(c)
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/r28-deadgen-race"
	const path = base + "/svc/x"
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	d2, err := discovery.New[details](c2, base)
	require.NoError(t, err)
	defer d2.Close()
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "x", 1)))

	armed.Store(true)
	proxy.Refuse()
	proxy.DropConnections()
	testutil.WaitState(t, states, framework.Lost, 30*time.Second)
	time.Sleep(1500 * time.Millisecond) // the closeSession of the session given up gets nowhere
	proxy.Heal()
	testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
	select {
	case <-reached:
	case <-time.After(20 * time.Second):
		close(release)
		t.Fatal("the keeper did not replace its node of the session given up")
	}
	// Another process registers the id now: the last registration wins.
	require.NoError(t, d2.Register(ctx, newInstance(t, "svc", "x", 2)))
	theirs, err := c2.Exists(ctx, path)
	require.NoError(t, err)
	require.Equal(t, c2.SessionID(), theirs.EphemeralOwner)
	close(release)
	t.Logf("the keeper's replacement: %v", <-multiDone)

	now, err := c2.Exists(ctx, path)
	require.NoError(t, err)
	require.NotNil(t, now)
	assert.Equal(t, theirs.Czxid, now.Czxid, "the newer registration's node is still there (owner now 0x%x, theirs 0x%x)", now.EphemeralOwner, c2.SessionID())
	got, err := d2.QueryForInstance(ctx, "svc", "x")
	require.NoError(t, err)
	assert.Equal(t, 2, got.Port, "the last registration's instance is the one registered")
}

// The keeper looks at its node again at each reconnection (a wake), setting a new data
// watch each time, while the one it set before has not fired (the node did not change):
// go-zookeeper keeps every one of them until the node changes, so a registration on a
// flaky network holds one more watch per reconnection.
func TestKeeperWatchesDoNotGrowWithReconnections(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second))
	states := testutil.States(c)
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/r28-watch-growth"
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "x", 1)))
	require.Eventually(t, func() bool { return testutil.ZKWatchers(t, c, base+"/svc/x").Data >= 1 }, 10*time.Second, 5*time.Millisecond)
	for i := 0; i < 5; i++ {
		before := c.Requests()
		proxy.DropConnections()
		testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
		require.Eventually(t, func() bool { return c.Requests() > before }, 10*time.Second, 5*time.Millisecond)
		_, err := c.Exists(ctx, base+"/svc/x")
		require.NoError(t, err)
	}
	time.Sleep(200 * time.Millisecond) // the keeper's look after the last wake
	_, err = c.Exists(ctx, base+"/svc/x")
	require.NoError(t, err)
	w := testutil.ZKWatchers(t, c, base+"/svc/x")
	t.Logf("watchers on the node after 5 reconnections: %+v", w)
	assert.LessOrEqual(t, w.Data+w.Exists, 2, "the keeper's watches on its node grow with reconnections")
}

// Ownership is per registration (doc: "Unregister, Close and Update touch only the node
// this registration made, never another registration's node of the same id, even on the
// same client"). A cancelled Register's cleanup, which never read its node back (czxid
// 0), takes for its own any node at the path with the bytes of its create and owned by
// its session: a second registry on the same client that registers the same instance
// value meanwhile replaces the node (last registration wins), and the cleanup then deletes
// that registration's node.
func TestCancelledRegisterCleanupSparesAnotherRegistryOnTheClient(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	var armCreate, armSync atomic.Bool
	syncReached, syncRelease := make(chan struct{}), make(chan struct{})
	hook := framework.WithRequestHook(func(op string) {
		switch {
		case op == "create" && armCreate.CompareAndSwap(true, false):
			proxy.HoldReplies()
		case op == "sync" && armSync.CompareAndSwap(true, false):
			close(syncReached)
			<-syncRelease // the cleanup's look at the node waits here
		}
	})
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second), hook)
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/r28-cleanup-other-registry"
	const path = base + "/svc/x"
	dA, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer dA.Close()
	dB, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer dB.Close()
	_, err = other.Create(ctx, base+"/svc", nil, framework.WithParents())
	require.NoError(t, err)
	_, err = c.Exists(ctx, "/")
	require.NoError(t, err)
	inst := newInstance(t, "svc", "x", 1) // one value, registered by both registries

	armCreate.Store(true)
	actx, acancel := context.WithCancel(ctx)
	first := testutil.Go(actx, func(ctx context.Context) error { return dA.Register(ctx, inst) })
	require.Eventually(t, func() bool {
		st, err := other.Exists(ctx, path)
		return err == nil && st != nil
	}, 20*time.Second, 5*time.Millisecond, "A's create is applied (its reply held)")
	acancel()
	require.ErrorIs(t, testutil.Result(t, first, 30*time.Second, "A's cancelled Register"), context.Canceled)

	armSync.Store(true)
	proxy.Heal()
	select {
	case <-syncReached:
	case <-time.After(20 * time.Second):
		close(syncRelease)
		t.Fatal("A's cleanup did not look at the node")
	}
	require.NoError(t, dB.Register(ctx, inst), "B registers the same instance (the last registration wins)")
	theirs, err := other.Exists(ctx, path)
	require.NoError(t, err)
	require.NotNil(t, theirs)
	close(syncRelease)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))

	now, err := other.Exists(ctx, path)
	require.NoError(t, err)
	if assert.NotNil(t, now, "B's node was deleted by A's cleanup") {
		assert.Equal(t, theirs.Czxid, now.Czxid, "B's node is the one B made (czxid): A's cleanup deleted it and B's keeper made another")
	}
}

// Two registries on one client register the same DynamicSequential instance value: the
// second Register's adopt (sweep) takes the first registration's node (this session's,
// named after the id, with the same bytes) for its own instead of making its node, so
// two registrations share one node, and the first one's Unregister deletes the second's
// instance. Each registration must own its own node.
func TestSequentialSameValueTwoRegistriesOneClientEachOwnANode(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	const base = "/disc/r28-seq-same-value"
	dA, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer dA.Close()
	dB, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer dB.Close()
	inst := newInstance(t, "svc", "w-", 1, discovery.WithServiceType(discovery.DynamicSequential))
	require.NoError(t, dA.Register(ctx, inst))
	require.NoError(t, dB.Register(ctx, inst))
	kids, _, err := c.Children(ctx, base+"/svc")
	require.NoError(t, err)
	assert.Len(t, kids, 2, "each registration made its own node: %v", kids)

	require.NoError(t, dA.Unregister(ctx, inst))
	kids, _, err = c.Children(ctx, base+"/svc")
	require.NoError(t, err)
	assert.Len(t, kids, 1, "B's node is there after A's Unregister: %v", kids)
	require.NoError(t, dB.Close())
	testutil.RequireNoChildren(t, connect, base+"/svc")
}

// A provider follows its service after the service's node went (a container ZooKeeper
// reaped once its last instance left; here deleted by hand): an instance registered
// afterwards (which makes the node again) is handed out.
func TestProviderFollowsAServiceMadeAgain(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	other := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	const base = "/disc/r28-parent-again"
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	od, err := discovery.New[details](other, base)
	require.NoError(t, err)
	defer od.Close()
	first := newInstance(t, "svc", "x", 1)
	require.NoError(t, od.Register(ctx, first))
	p, err := discovery.NewProvider(d, "svc")
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	require.NoError(t, od.Unregister(ctx, first))
	require.Eventually(t, func() bool { all, err := p.GetAllInstances(); return err == nil && len(all) == 0 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, other.Delete(ctx, base+"/svc"))
	require.Eventually(t, func() bool { all, err := p.GetAllInstances(); return err == nil && len(all) == 0 }, 10*time.Second, 5*time.Millisecond)

	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "y", 2)))
	assert.Eventually(t, func() bool {
		all, err := p.GetAllInstances()
		return err == nil && len(all) == 1 && all[0].ID == "y"
	}, 10*time.Second, 5*time.Millisecond, "the instance registered after the service's node was made again is handed out")
	require.NoError(t, p.Close())
}

// A Register whose write fails for a connection loss (no retry left) before its context
// ends cleans up in the foreground, in deleteNode, which runs on
// context.WithoutCancel(ctx) with cleanupTimeout: on a connection still stalled, the
// Register returns cleanupTimeout (10 s) after the failure, long past its context.
func TestRegisterReturnsWithItsContextOnAStalledConnection(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	none, err := retry.NewNTimes(0, 0)
	require.NoError(t, err)
	// A 3 s session: the client gives the silent connection up after 2 s and the
	// Register's request fails then (no retry), well before its 8 s context ends.
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(3*time.Second),
		framework.WithRetryPolicy(none))
	ctx := testutil.Context(t, 90*time.Second)
	d, err := discovery.New[details](c, "/disc/r28-register-ctx")
	require.NoError(t, err)
	defer d.Close()
	defer proxy.Heal()
	_, err = c.Exists(ctx, "/")
	require.NoError(t, err)
	proxy.Stall()
	rctx, rcancel := context.WithTimeout(ctx, 8*time.Second)
	defer rcancel()
	start := time.Now()
	err = d.Register(rctx, newInstance(t, "svc", "x", 1))
	took := time.Since(start)
	t.Logf("Register with an 8 s context on a stalled connection: %v after %v", err, took.Round(time.Millisecond))
	require.Error(t, err)
	assert.Less(t, took, 10*time.Second, "Register returns by its context's end (8 s), give or take")
}

// deleteNode, when it cannot read the node (here: the connection stalled for the whole
// call), deletes a Static node with a guaranteed delete bound to nothing ("Not known
// whether it is ours: delete it only if it is a persistent one"). Alone: the Static node
// of a registration Unregister forgot must go once the connection is back. Replaced: when
// another registration made its own node at the path meanwhile (ours was deleted, theirs
// created: another czxid), that node must stay.
func TestStaticUnregisterDuringAStallDeletesOnlyItsNode(t *testing.T) {
	for _, how := range []string{"alone", "replaced"} {
		t.Run(how, func(t *testing.T) {
			leakcheck.Check(t)
			server := zktest.NewServer(t)
			proxy := zktest.NewProxy(t, server.ConnectString())
			base := "/disc/r28-static-stall-" + how
			path := base + "/svc/s"
			var reads atomic.Int32
			c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
				framework.WithRequestObserver(func(ri framework.RequestInfo) {
					if ri.Op == "getData" && ri.Path == path && ri.Err == nil {
						reads.Add(1)
					}
				}))
			other := testutil.Connect(t, server.ConnectString())
			ctx := testutil.Context(t, 90*time.Second)
			d, err := discovery.New[details](c, base)
			require.NoError(t, err)
			defer d.Close()
			defer proxy.Heal()
			od, err := discovery.New[details](other, base)
			require.NoError(t, err)
			defer od.Close()
			static := discovery.WithServiceType(discovery.Static)
			inst := newInstance(t, "svc", "s", 1, static)
			require.NoError(t, d.Register(ctx, inst))
			require.Eventually(t, func() bool { return reads.Load() >= 2 }, 20*time.Second, 5*time.Millisecond,
				"the keeper's first read (after Register's) is answered")

			proxy.Stall()
			var theirs *framework.Stat
			if how == "replaced" {
				require.NoError(t, other.Delete(ctx, path))
				require.NoError(t, od.Register(ctx, newInstance(t, "svc", "s", 2, static)))
				theirs, err = other.Exists(ctx, path)
				require.NoError(t, err)
			}
			uctx, ucancel := context.WithTimeout(ctx, 500*time.Millisecond)
			err = d.Unregister(uctx, inst)
			ucancel()
			t.Logf("Unregister during the stall: %v", err)
			proxy.Heal()
			require.NoError(t, c.WaitGuaranteedDeletes(ctx))
			_, err = c.Exists(ctx, "/")
			require.NoError(t, err)
			require.NoError(t, other.Sync(ctx, "/"))
			st, err := other.Exists(ctx, path)
			require.NoError(t, err)
			if how == "alone" {
				assert.Nil(t, st, "the forgotten registration's Static node is left for good")
				return
			}
			if assert.NotNil(t, st, "the other registration's node was deleted") {
				assert.Equal(t, theirs.Czxid, st.Czxid, "the other registration's node is the one it made")
			}
		})
	}
}

// Register's doc: "On error nothing is registered and any node this call created is
// deleted." A DynamicSequential Register whose create was applied but whose reply was
// lost with the connection (its name never came back, so the framework cannot undo it),
// and whose context ends before the client is back, cleans up with deleteNode, which
// returns at once on r.path == "": no sweep for the node named after the id, and the
// ephemeral-sequential node stays for the session's life, registered by no one.
func TestSequentialRegisterWithLostReplyGivenUpLeavesNoNode(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	var armed atomic.Bool
	hook := framework.WithRequestHook(func(op string) {
		if op == "create" && armed.CompareAndSwap(true, false) {
			proxy.DropNextCreateReply() // applied; the reply lost with the connection
			proxy.Refuse()              // and the client cannot come back for now
		}
	})
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second), hook)
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/r28-seq-lost-reply"
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	defer proxy.Heal()
	_, err = other.Create(ctx, base+"/svc", nil, framework.WithParents())
	require.NoError(t, err)
	_, err = c.Exists(ctx, "/")
	require.NoError(t, err)

	armed.Store(true)
	rctx, rcancel := context.WithCancel(ctx)
	registered := testutil.Go(rctx, func(ctx context.Context) error {
		return d.Register(ctx, newInstance(t, "svc", "seq-", 1, discovery.WithServiceType(discovery.DynamicSequential)))
	})
	require.Eventually(t, func() bool {
		kids, _, err := other.Children(ctx, base+"/svc")
		return err == nil && len(kids) == 1
	}, 20*time.Second, 5*time.Millisecond, "the create is applied (its reply lost)")
	rcancel()
	t.Logf("the cancelled Register: %v", testutil.Result(t, registered, 30*time.Second, "the cancelled Register"))

	proxy.Heal()
	_, err = c.Exists(ctx, "/") // the client is back, on the same session
	require.NoError(t, err)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.NoError(t, other.Sync(ctx, "/"))
	var kids []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		kids, _, err = other.Children(ctx, base+"/svc")
		require.NoError(t, err)
		if len(kids) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Empty(t, kids, "the given-up Register's sequential node is left under the live session 0x%x", c.SessionID())
	assert.Empty(t, d.Registered())
}

// Close during the keeper's re-creation of an instance's node (someone deleted it) sent
// on a connection that then hangs: the create is applied once the connection is back,
// after Close gave the registration up. Close "unregisters every instance still
// registered (deleting their nodes as Unregister does ... the deletes not done by then go
// on in the background)": once the connection is back and WaitGuaranteedDeletes
// returned, no node of the closed registry may be there (an ephemeral node would stay for
// the client's session, handed out by every provider).
func TestCloseDuringHungRecreationLeavesNoNode(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, server.ConnectString())
	var armed atomic.Bool
	sent := make(chan struct{})
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
		framework.WithRequestHook(func(op string) {
			if (op == "create" || op == "multi") && armed.CompareAndSwap(true, false) {
				proxy.Stall() // the re-creation goes out into a connection that answers nothing
				close(sent)
			}
		}))
	other := testutil.Connect(t, server.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const base = "/disc/hung-recreate"
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Heal(); _ = d.Close() })
	inst := newInstance(t, "svc", "a", 1)
	require.NoError(t, d.Register(ctx, inst))
	path := base + "/svc/a"

	armed.Store(true)
	require.NoError(t, other.Delete(ctx, path))
	testutil.WaitClosed(t, sent, 20*time.Second, "the keeper's re-creation")
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		t.Logf("Close during the stall: %v", err)
	case <-time.After(15 * time.Second): // a bound on the wait, not an assertion
		proxy.Heal()
		t.Logf("Close: %v", <-closed)
	}
	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	_, err = c.Exists(ctx, base) // every request c sent before has been answered
	require.NoError(t, err)
	st, err := other.Exists(ctx, path)
	require.NoError(t, err)
	if st != nil {
		assert.Failf(t, "the node is left", "the closed registry's node %s (owner 0x%x, the client's live session 0x%x) was made after Close returned and is still there",
			path, st.EphemeralOwner, c.SessionID())
	}
}

// A registered instance whose node someone makes unreadable to the registry's client and
// then deletes is registered again: "A registered instance is kept: when its node goes
// (the session expired and the client has a new one, or someone deleted it) it is
// created again once the client is connected". ZooKeeper sends no event on a node to a
// client that may not read it, so the keeper must not rest on its watch alone.
func TestRegisteredNodeMadeUnreadableThenDeletedIsCreatedAgain(t *testing.T) {
	leakcheck.Check(t)
	server := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, server.ConnectString())
	other := testutil.ConnectFailFast(t, server.ConnectString(), framework.WithAuth("digest", []byte("other:pw")))
	ctx := testutil.Context(t, 60*time.Second)
	const base = "/disc/unreadable-deleted"
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	t.Cleanup(func() { _ = other.Delete(ctx, base, framework.WithChildren(), framework.Quietly()) })
	require.NoError(t, d.Register(ctx, newInstance(t, "svc", "a", 1)))
	path := base + "/svc/a"
	_, old, err := other.GetData(ctx, path)
	require.NoError(t, err)

	_, err = other.SetACL(ctx, path, zk.DigestACL(zk.PermAll, "other", "pw"), -1)
	require.NoError(t, err)
	require.NoError(t, other.Delete(ctx, path))
	var st *framework.Stat
	require.Eventually(t, func() bool {
		st, err = other.Exists(ctx, path)
		return err == nil && st != nil
	}, 25*time.Second, 20*time.Millisecond, "the instance was not registered again within 25 s of its node's deletion")
	assert.Greater(t, st.Czxid, old.Czxid)
}
