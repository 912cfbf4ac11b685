package reliability_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// Every recipe over TLS: the clients of these scenarios speak TLS, with a
// client certificate, to the secure client port of a server that requires one (a
// standalone server: zktest.NewTLSServer). The lock recipes (every kind of the family's
// famLocks) hold while a contender on another client waits, and the contender gets in
// once they release; the other recipes run the family's two-instances scenarios
// (famScenarios), whose checkers are the ownership ledger, the overlap and the
// conservation checkers; the caches and service discovery's cache and provider follow the
// writes of another client, event by event. After each scenario: no goroutine left
// (leakcheck), no node, ephemeral or watch left under its base path on the server.

// tlsWorld returns a family world whose three clients (a, b and the admin) speak TLS with
// cfg to srv's secure port.
func tlsWorld(t *testing.T, srv *zktest.Server, cfg *tls.Config) *famWorld {
	t.Helper()
	leakcheck.Check(t)
	e := &env{t: t, base: fmt.Sprintf("/tls/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), pathSeq.Add(1))}
	for range 3 {
		e.others = append(e.others, connect(t, srv.SecureConnectString(), otherSession, framework.WithTLS(cfg)))
	}
	e.victim, e.others = e.others[0], e.others[1:]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &famWorld{t: t, e: e, ctx: ctx, a: e.victim, b: e.others[0], admin: e.others[1], led: newOwnLedger()}
}

// finishTLS is famWorld.finish for a world on srv: the ownership ledger's end, then
// nothing of the scenario left on srv (env.checkClean checks the shared ensemble).
func (w *famWorld) finishTLS(srv *zktest.Server) {
	w.t.Helper()
	for _, c := range []*framework.Client{w.a, w.b} {
		require.NoError(w.t, c.WaitGuaranteedDeletes(w.ctx))
	}
	var tree map[string]int64
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if tree = w.tree(w.e.base); len(tree) == 0 || time.Now().After(deadline) {
			break
		}
	}
	w.led.finish(tree)
	probs := w.led.report()
	for _, p := range probs {
		w.t.Error("ownership: " + p)
	}
	count(w.t, "ownership", checkCount{ops: w.led.ops, violations: len(probs)})
	for _, p := range serverLeftovers(w.t, srv, w.e.base, 30*time.Second) {
		w.t.Error(p)
	}
}

// serverLeftovers lists what is left under base on srv (read on its plain port): nodes
// (containers not reaped), watches, ephemeral nodes. Each gets up to wait to clear.
func serverLeftovers(t *testing.T, srv *zktest.Server, base string, wait time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait+30*time.Second)
	defer cancel()
	var out []string
	eventually := func(what string, ok func() (bool, string)) {
		deadline := time.Now().Add(wait)
		for {
			done, detail := ok()
			if done {
				return
			}
			if time.Now().After(deadline) {
				out = append(out, what+": "+detail)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	eventually("nodes under "+base+" not reaped", func() (bool, string) {
		kids, err := zktest.Children(ctx, srv.ConnectString(), base)
		return err == nil && len(kids) == 0, fmt.Sprint(kids, err)
	})
	eventually("watches left under "+base, func() (bool, string) {
		wchc, err := zktest.FourLetterWord(srv.Addr(), "wchc", 5*time.Second)
		return err == nil && !strings.Contains(wchc, base+"/") && !strings.Contains(wchc, base+"\n"), fmt.Sprint(wchc, err)
	})
	eventually("ephemeral nodes left under "+base, func() (bool, string) {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for sid, nodes := range owners {
			for _, n := range nodes {
				if strings.HasPrefix(n, base+"/") {
					left = append(left, fmt.Sprintf("%s (session 0x%x)", n, sid))
				}
			}
		}
		return len(left) == 0, fmt.Sprint(left)
	})
	count(t, "cleanliness", checkCount{ops: 1, leaked: len(out)})
	return out
}

// TestTLSRecipes runs every recipe over TLS (see the top of this file).
func TestTLSRecipes(t *testing.T) {
	start := time.Now()
	srv, m := zktest.NewTLSServer(t, zktest.RequireClientCert())
	cfg := m.ClientConfig()
	type scenario struct {
		name string
		run  func(w *famWorld)
	}
	var all []scenario
	for _, k := range famLocks {
		all = append(all, scenario{"lock-" + k.name, tlsLock(k)})
	}
	for _, s := range famScenarios {
		all = append(all, scenario{s.name, s.two})
	}
	all = append(all,
		scenario{"curatorcache", tlsCuratorCache},
		scenario{"nodecache", tlsNodeCache},
		scenario{"pathchildrencache", tlsPathChildrenCache},
		scenario{"treecache", tlsTreeCache},
		scenario{"discovery-cache-provider", tlsDiscoveryProvider},
	)
	for _, s := range all {
		t.Run(s.name, func(t *testing.T) {
			w := tlsWorld(t, srv, cfg)
			s.run(w)
			w.finishTLS(srv)
		})
	}
	t.Logf("%d recipes' scenarios over TLS: %v", len(all), time.Since(start).Round(time.Millisecond))
}

// tlsLock: holders of kind k on client a hold; a contender on client b waits (its node
// made) and does not get in while they hold; they release, and it gets in; never more
// holders than allowed.
func tlsLock(k lockKind) func(w *famWorld) {
	return func(w *famWorld) {
		t := w.t
		path := w.e.base + "/lock"
		ia, err := k.newInst(w.a, path)
		require.NoError(t, err)
		ib, err := k.newInst(w.b, path)
		require.NoError(t, err)
		ov := newOverlap(k.holders)
		out := make(chan acquired, 2)
		var wg sync.WaitGroup
		defer wg.Wait()
		var holds []*famHold
		for i := range k.holders {
			l, err := ia.hold(w.ctx)
			holds = append(holds, w.hold(ov, acquired{fmt.Sprintf("a%d", i+1), ia.holdExcl, l, err}))
		}
		dir := k.dir(path)
		before := len(w.tree(dir))
		goAcquire(w.ctx, &wg, out, "b-waiter", ib.waitExcl, ib.wait)
		w.waitNodes(dir, before+1)
		w.settle(path)
		noneYet(t, out, "while the holders hold")
		for _, h := range holds {
			select {
			case <-h.lease.Done():
				t.Errorf("%s's lease ended while it held", h.inst)
			default:
			}
			w.release(ov, h, path, false)
		}
		h := w.hold(ov, w.next(out))
		w.release(ov, h, path, false)
		_, violations := ov.counts()
		assert.Zero(t, violations, "more holders than allowed")
		count(t, "overlap", checkCount{ops: 1, violations: violations})
	}
}

// evLog records a cache's events as text ("TYPE path data", "TYPE path old->new" for an
// update), paths relative to root.
type evLog struct {
	root string
	mu   sync.Mutex
	got  []string
}

func (l *evLog) add(typ fmt.Stringer, old, node *cache.ChildData) {
	var s string
	switch {
	case node == nil && old == nil:
		s = typ.String()
	case node == nil:
		s = fmt.Sprintf("%v %s %s", typ, l.rel(old.Path), old.Data)
	case old == nil:
		s = fmt.Sprintf("%v %s %s", typ, l.rel(node.Path), node.Data)
	default:
		s = fmt.Sprintf("%v %s %s->%s", typ, l.rel(node.Path), old.Data, node.Data)
	}
	l.mu.Lock()
	l.got = append(l.got, s)
	l.mu.Unlock()
}

// event is a listener for NodeCache, PathChildrenCache and TreeCache; Initialized is
// not recorded.
func (l *evLog) event(e cache.Event) {
	if e.Type == cache.Initialized {
		return
	}
	l.add(e.Type, e.Old, e.Data)
}

func (l *evLog) rel(p string) string {
	if p == l.root {
		return "."
	}
	return strings.TrimPrefix(p, l.root+"/")
}

func (l *evLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// expect waits until the events recorded are want (each step waits for the event of the
// write before the next write, so none are coalesced), and fails if they differ.
func (l *evLog) expect(w *famWorld, want ...string) {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(l.list()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	w.settle(l.root)
	require.Equal(w.t, want, l.list(), "the cache's events")
}

// write runs a write of the scenario, failing it on an error.
func (w *famWorld) write(what string, f func() error) {
	w.t.Helper()
	require.NoError(w.t, f(), what)
}

func (w *famWorld) mk(c *framework.Client, path, data string) func() error {
	return func() error {
		_, err := c.Create(w.ctx, path, []byte(data), framework.WithContainerParents())
		return err
	}
}

func (w *famWorld) set(c *framework.Client, path, data string) func() error {
	return func() error { _, err := c.SetData(w.ctx, path, []byte(data), -1); return err }
}

func (w *famWorld) rm(c *framework.Client, path string) func() error {
	return func() error { return c.Delete(w.ctx, path) }
}

// tlsCuratorCache: a CuratorCache on client a follows a subtree that client b writes:
// every creation, change and deletion, with the data before and after.
func tlsCuratorCache(w *famWorld) {
	t := w.t
	root := w.e.base + "/cc"
	w.write("root", w.mk(w.admin, root, "root"))
	cc, err := cache.NewCuratorCache(w.a, root)
	require.NoError(t, err)
	defer cc.Close()
	l := &evLog{root: root}
	cc.AddListener(cache.NewCuratorCacheListener().ForAll(func(typ cache.EventType, old, node *cache.ChildData) {
		l.add(typ, old, node)
	}).Build())
	require.NoError(t, cc.Start(w.ctx))
	want := []string{"NODE_CREATED . root"}
	l.expect(w, want...)
	for _, step := range []struct {
		write func() error
		event string
	}{
		{w.mk(w.b, root+"/x", "1"), "NODE_CREATED x 1"},
		{w.set(w.b, root+"/x", "2"), "NODE_CHANGED x 1->2"},
		{w.mk(w.b, root+"/x/y", "deep"), "NODE_CREATED x/y deep"},
		{w.rm(w.b, root+"/x/y"), "NODE_DELETED x/y deep"},
		{w.rm(w.b, root+"/x"), "NODE_DELETED x 2"},
	} {
		w.write(step.event, step.write)
		want = append(want, step.event)
		l.expect(w, want...)
	}
	_, ok := cc.Get(root + "/x")
	assert.False(t, ok, "x is cached after its deletion")
	assert.Equal(t, 1, cc.Size(), "the cache holds the root alone")
	require.NoError(t, cc.Close())
	w.write("root", w.rm(w.admin, root))
}

// tlsNodeCache: a NodeCache on client a follows a node that client b creates, changes,
// deletes and creates again.
func tlsNodeCache(w *famWorld) {
	t := w.t
	path := w.e.base + "/nc/node"
	nc, err := cache.NewNodeCache(w.a, path)
	require.NoError(t, err)
	defer nc.Close()
	l := &evLog{root: path}
	nc.AddListener(l.event)
	require.NoError(t, nc.Start(w.ctx))
	_, ok := nc.Current()
	require.False(t, ok, "a node that does not exist is cached")
	var want []string
	for _, step := range []struct {
		write func() error
		event string
	}{
		{w.mk(w.b, path, "1"), "NODE_CREATED . 1"},
		{w.set(w.b, path, "2"), "NODE_CHANGED . 1->2"},
		{w.rm(w.b, path), "NODE_DELETED . 2"},
		{w.mk(w.b, path, "3"), "NODE_CREATED . 3"},
	} {
		w.write(step.event, step.write)
		want = append(want, step.event)
		l.expect(w, want...)
	}
	cur, ok := nc.Current()
	require.True(t, ok, "the node made again is not cached")
	assert.Equal(t, "3", string(cur.Data))
	require.NoError(t, nc.Close())
	w.write("node", w.rm(w.admin, path))
}

// tlsPathChildrenCache: a PathChildrenCache on client a follows the children client b
// adds, updates and removes (one of them ephemeral).
func tlsPathChildrenCache(w *famWorld) {
	t := w.t
	root := w.e.base + "/pcc"
	w.write("root", w.mk(w.admin, root, ""))
	pc, err := cache.NewPathChildrenCache(w.a, root)
	require.NoError(t, err)
	defer pc.Close()
	l := &evLog{root: root}
	pc.AddListener(l.event)
	require.NoError(t, pc.Start(w.ctx))
	var want []string
	for _, step := range []struct {
		write func() error
		event string
	}{
		{w.mk(w.b, root+"/c1", "1"), "CHILD_ADDED c1 1"},
		{w.set(w.b, root+"/c1", "2"), "CHILD_UPDATED c1 1->2"},
		{func() error {
			_, err := w.b.Create(w.ctx, root+"/c2", []byte("e"), framework.WithMode(framework.Ephemeral))
			return err
		}, "CHILD_ADDED c2 e"},
		{w.rm(w.b, root+"/c1"), "CHILD_REMOVED c1 2"},
	} {
		w.write(step.event, step.write)
		want = append(want, step.event)
		l.expect(w, want...)
	}
	var paths []string
	for _, d := range pc.Current() {
		paths = append(paths, d.Path)
	}
	assert.Equal(t, []string{root + "/c2"}, paths, "the cached children")
	w.write("c2", w.rm(w.b, root+"/c2"))
	l.expect(w, append(want, "CHILD_REMOVED c2 e")...)
	require.NoError(t, pc.Close())
	w.write("root", w.rm(w.admin, root))
}

// tlsTreeCache: a TreeCache on client a follows a subtree that client b grows, changes
// and prunes.
func tlsTreeCache(w *famWorld) {
	t := w.t
	root := w.e.base + "/tc"
	w.write("root", w.mk(w.admin, root, "root"))
	tc, err := cache.NewTreeCache(w.a, root)
	require.NoError(t, err)
	defer tc.Close()
	l := &evLog{root: root}
	tc.AddListener(l.event)
	require.NoError(t, tc.Start(w.ctx))
	want := []string{"NODE_ADDED . root"}
	l.expect(w, want...)
	for _, step := range []struct {
		write func() error
		event string
	}{
		{w.mk(w.b, root+"/a", "1"), "NODE_ADDED a 1"},
		{w.mk(w.b, root+"/a/b", "2"), "NODE_ADDED a/b 2"},
		{w.set(w.b, root+"/a", "3"), "NODE_UPDATED a 1->3"},
		{w.rm(w.b, root+"/a/b"), "NODE_REMOVED a/b 2"},
		{w.rm(w.b, root+"/a"), "NODE_REMOVED a 3"},
	} {
		w.write(step.event, step.write)
		want = append(want, step.event)
		l.expect(w, want...)
	}
	snap := tc.Snapshot()
	assert.Len(t, snap, 1, "the cache holds the root alone: %v", snap)
	require.NoError(t, tc.Close())
	w.write("root", w.rm(w.admin, root))
}

// tlsDiscoveryProvider: instances registered from clients a and b are seen by a
// provider (round robin, on its ServiceCache) on a third discovery of client a; b's
// unregistration leaves a's instance alone in the cache and in a query.
func tlsDiscoveryProvider(w *famWorld) {
	t, ctx := w.t, w.ctx
	base := w.e.base + "/disc"
	reg := func(c *framework.Client, id string) (*discovery.ServiceDiscovery[string], *discovery.Instance[string]) {
		d, err := discovery.New[string](c, base)
		require.NoError(t, err)
		inst, err := discovery.NewInstance("svc", "payload-"+id, discovery.WithID(id), discovery.WithAddress("10.0.0.1"), discovery.WithPort(8080))
		require.NoError(t, err)
		require.NoError(t, d.Register(ctx, inst))
		return d, inst
	}
	da, _ := reg(w.a, "ia")
	defer da.Close()
	db, ib := reg(w.b, "ib")
	defer db.Close()
	dq, err := discovery.New[string](w.a, base)
	require.NoError(t, err)
	defer dq.Close()
	p, err := discovery.NewProvider(dq, "svc", discovery.WithStrategy(discovery.RoundRobin()))
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.Start(ctx))
	ids := func() []string {
		all, err := p.GetAllInstances()
		require.NoError(t, err)
		var out []string
		for _, i := range all {
			assert.Equal(t, "payload-"+i.ID, i.Payload)
			assert.Equal(t, 8080, i.Port)
			out = append(out, i.ID)
		}
		slices.Sort(out)
		return out
	}
	w.waitFor("both instances in the provider's cache", func() bool { return slices.Equal(ids(), []string{"ia", "ib"}) })
	chosen := map[string]bool{}
	for range 2 {
		i, err := p.GetInstance()
		require.NoError(t, err)
		chosen[i.ID] = true
	}
	assert.Len(t, chosen, 2, "round robin over two instances chose %v", chosen)
	require.NoError(t, db.Unregister(ctx, ib))
	w.waitFor("b's instance gone from the provider's cache", func() bool { return slices.Equal(ids(), []string{"ia"}) })
	got, err := dq.QueryForInstances(ctx, "svc")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "ia", got[0].ID)
	require.NoError(t, p.Close())
	for _, d := range []*discovery.ServiceDiscovery[string]{dq, db, da} {
		require.NoError(t, d.Close())
	}
	if err := w.admin.Delete(ctx, base+"/svc", framework.Quietly()); err != nil && !errors.Is(err, framework.ErrNotEmpty) {
		require.NoError(t, err)
	}
}
