package cache_test

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// scaleNodes is the size of the tree the scale tests cache. The fast profile
// runs them on a small tree; make soak runs them on 100 101 nodes
// (-args -scale.nodes=100101), which takes several minutes.
var scaleNodes = flag.Int("scale.nodes", 1101, "nodes of the tree TestCuratorCacheAtScale* caches (make soak: 100101)")

const (
	scaleRoot     = "/big"
	scaleParents  = 100
	scaleDataSize = 64
	// scaleChanges is how many nodes each fault scenario updates, creates and deletes.
	scaleChanges = 100
)

// scaleTree returns the paths of a tree of n nodes at scaleRoot, the shape of zkbench's
// cache-init: the root, scaleParents parents /big/pNNNN, the rest spread evenly over them
// as /big/pNNNN/cNNNN. Parents come before their children.
func scaleTree(n int) []string {
	paths := []string{scaleRoot}
	parents := min(scaleParents, n-1)
	for p := range parents {
		paths = append(paths, fmt.Sprintf("%s/p%04d", scaleRoot, p))
	}
	for i := range n - 1 - parents {
		paths = append(paths, fmt.Sprintf("%s/p%04d/c%04d", scaleRoot, i%parents, i/parents))
	}
	return paths
}

func scaleData(tag string) []byte {
	b := []byte(strings.Repeat(tag, scaleDataSize/len(tag)+1))
	return b[:scaleDataSize]
}

// buildScaleTree creates paths (parents first) in multis of 50 creates, 16 multis in
// flight at once: a 100 101-node tree takes seconds. (The server keeps its last 500
// transactions in memory: multis of 1000 creates would hold some 50 MB of zktest's
// server's 128 MB heap.)
func buildScaleTree(t *testing.T, conn *zk.Conn, paths []string) {
	t.Helper()
	t0 := time.Now()
	acl := zk.WorldACL(zk.PermAll)
	data := scaleData("x")
	parents := min(scaleParents, len(paths)-1)
	levels := [][]string{paths[:1], paths[1 : 1+parents], paths[1+parents:]}
	for _, level := range levels {
		var batches [][]any
		for i := 0; i < len(level); i += 50 {
			var ops []any
			for _, p := range level[i:min(i+50, len(level))] {
				ops = append(ops, &zk.CreateRequest{Path: p, Data: data, Acl: acl})
			}
			batches = append(batches, ops)
		}
		require.NoError(t, parallel(len(batches), 16, func(i int) error {
			_, err := conn.Multi(batches[i]...)
			return err
		}))
	}
	t.Logf("built %d nodes in %.1f s", len(paths), time.Since(t0).Seconds())
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first error.
func parallel(n, workers int, fn func(int) error) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		next  = make(chan int)
	)
	for range min(n, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// readScaleTree reads the whole subtree at scaleRoot from the server, a level at a time,
// 64 reads in flight.
func readScaleTree(t *testing.T, conn *zk.Conn) map[string]cache.ChildData {
	t.Helper()
	out := map[string]cache.ChildData{}
	var mu sync.Mutex
	level := []string{scaleRoot}
	for len(level) > 0 {
		kids := make([][]string, len(level))
		require.NoError(t, parallel(len(level), 64, func(i int) error {
			data, st, err := conn.Get(level[i])
			if err != nil {
				return fmt.Errorf("get %s: %w", level[i], err)
			}
			names, _, err := conn.Children(level[i])
			if err != nil {
				return fmt.Errorf("children %s: %w", level[i], err)
			}
			for _, n := range names {
				kids[i] = append(kids[i], level[i]+"/"+n)
			}
			mu.Lock()
			out[level[i]] = cache.ChildData{Path: level[i], Data: data, Stat: *st}
			mu.Unlock()
			return nil
		}))
		level = slices.Concat(kids...)
	}
	return out
}

// cacheContent is what cc holds now.
func cacheContent(cc *cache.CuratorCache) map[string]cache.ChildData {
	m := map[string]cache.ChildData{}
	for d := range cc.All() {
		m[d.Path] = d
	}
	return m
}

// scaleSetup builds the tree, connects the cache's client through a proxy and starts a
// CuratorCache of the tree, with a recorder; it returns once the cache is Initialized
// with every node.
type scaleSetup struct {
	srv    *zktest.Server
	proxy  *zktest.Proxy
	admin  *zk.Conn
	cw     *framework.Client // writes, straight to the server
	cc     *framework.Client // the cache's, through the proxy
	cache  *cache.CuratorCache
	rec    *recorder
	paths  []string
	states chan framework.State
}

func newScaleSetup(t *testing.T, sessionTimeout time.Duration) *scaleSetup {
	if *scaleNodes > 10_000 && os.Getenv(zktest.ServerHeapEnv) == "" {
		// zktest's server has 128 MB of heap: with 100 000 nodes and their 200 000 watches
		// it spends its time in full GCs (measured: 139 full GCs, 122 s, in 4 minutes).
		t.Setenv(zktest.ServerHeapEnv, "1g")
	}
	s := &scaleSetup{srv: zktest.NewServer(t)}
	s.proxy = zktest.NewProxy(t, s.srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Minute)
	admin, err := zktest.Dial(ctx, s.srv.ConnectString(), 30*time.Second)
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	s.admin = admin
	s.paths = scaleTree(*scaleNodes)
	buildScaleTree(t, admin, s.paths)
	s.cw = newClient(t, s.srv.ConnectString())
	s.cc = newClient(t, s.proxy.ConnectString(), framework.WithSessionTimeout(sessionTimeout))
	s.states = make(chan framework.State, 64)
	t.Cleanup(s.cc.AddListener(func(st framework.State) {
		select {
		case s.states <- st:
		default:
		}
	}))

	s.cache, err = cache.NewCuratorCache(s.cc, scaleRoot)
	require.NoError(t, err)
	s.rec = listen(t, newRecorder(scaleRoot, true), s.cache.AddListener)
	initialized := make(chan struct{})
	t.Cleanup(s.cache.AddListener(cache.NewCuratorCacheListener().ForInitialized(func() { close(initialized) }).Build()))
	t0 := time.Now()
	require.NoError(t, s.cache.Start(ctx))
	t.Cleanup(func() { _ = s.cache.Close() })
	select {
	case <-initialized:
	case <-ctx.Done():
		t.Fatalf("no Initialized: %v", ctx.Err())
	}
	t.Logf("%d nodes: Initialized in %.1f s", len(s.paths), time.Since(t0).Seconds())
	require.Equal(t, len(s.paths), s.cache.Size(), "every node cached")
	s.requireWatches(t, 2*len(s.paths))
	return s
}

// waitState waits for the cache client's state want.
func (s *scaleSetup) waitState(t *testing.T, want framework.State, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case st := <-s.states:
			if st == want {
				return
			}
		case <-deadline:
			t.Fatalf("the cache's client was not %v within %v", want, d)
		}
	}
}

// requireWatches waits until the server holds n watches (a data and a child watch per
// cached node): the cache's watches are all in place.
func (s *scaleSetup) requireWatches(t *testing.T, n int) {
	t.Helper()
	var got int64
	var err error
	require.Eventually(t, func() bool {
		got, err = zktest.MntrInt(s.srv.Addr(), "zk_watch_count")
		return err == nil && got == int64(n)
	}, 10*time.Minute, 50*time.Millisecond, "server watches: %d (%v), want %d", got, err, n)
}

// changeTree updates, creates and deletes scaleChanges leaves each (spread over the
// parents), creates a new parent with ten children and deletes a parent with all its
// children; it returns the events a cache must report for them, sorted.
func changeTree(t *testing.T, admin *zk.Conn, paths []string, tag string) []string {
	t.Helper()
	parents := min(scaleParents, len(paths)-1)
	leaves := paths[1+parents:]
	require.Greater(t, len(leaves), 3*scaleChanges+parents, "the tree is too small for the changes")
	var want []string
	var ops []any
	acl := zk.WorldACL(zk.PermAll)
	// Leaves of the last parent are left alone: that parent is deleted whole below.
	victim := paths[parents]
	pick := func(i int) string {
		for {
			p := leaves[i%len(leaves)]
			if !strings.HasPrefix(p, victim+"/") {
				return p
			}
			i++
		}
	}
	step := len(leaves) / (3 * scaleChanges)
	seen := map[string]bool{}
	for k := range 3 * scaleChanges {
		p := pick(k * step)
		for seen[p] {
			p = pick(k*step + 1)
		}
		seen[p] = true
		switch k % 3 {
		case 0:
			ops = append(ops, &zk.SetDataRequest{Path: p, Data: scaleData(tag), Version: -1})
			want = append(want, "NODE_CHANGED "+p)
		case 1:
			ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
			want = append(want, "NODE_DELETED "+p)
		case 2:
			np := fmt.Sprintf("%s-%s", p, tag)
			ops = append(ops, &zk.CreateRequest{Path: np, Data: scaleData(tag), Acl: acl})
			want = append(want, "NODE_CREATED "+np)
		}
	}
	np := fmt.Sprintf("%s/new-%s", scaleRoot, tag)
	ops = append(ops, &zk.CreateRequest{Path: np, Data: scaleData(tag), Acl: acl})
	want = append(want, "NODE_CREATED "+np)
	for i := range 10 {
		c := fmt.Sprintf("%s/c%04d", np, i)
		ops = append(ops, &zk.CreateRequest{Path: c, Data: scaleData(tag), Acl: acl})
		want = append(want, "NODE_CREATED "+c)
	}
	kids, _, err := admin.Children(victim)
	require.NoError(t, err)
	for _, k := range kids {
		ops = append(ops, &zk.DeleteRequest{Path: victim + "/" + k, Version: -1})
		want = append(want, "NODE_DELETED "+victim+"/"+k)
	}
	ops = append(ops, &zk.DeleteRequest{Path: victim, Version: -1})
	want = append(want, "NODE_DELETED "+victim)
	for i := 0; i < len(ops); i += 50 {
		_, err := admin.Multi(ops[i:min(i+50, len(ops))]...)
		require.NoError(t, err)
	}
	sort.Strings(want)
	return want
}

// dataEvents returns the events from the recorder's position from on, connection events
// left out, sorted.
func dataEvents(r *recorder, from int) []string {
	var out []string
	for _, s := range r.all()[from:] {
		if strings.HasPrefix(s, "NODE_") {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// waitEqual waits until the cache and the recorder's replay of its events both equal want.
func (s *scaleSetup) waitEqual(t *testing.T, want map[string]cache.ChildData, d time.Duration) {
	t.Helper()
	var last string
	deadline := time.Now().Add(d)
	for {
		last = diff(cacheContent(s.cache), want)
		if last == "" {
			last = diff(s.rec.snapshotModel(), want)
			if last == "" {
				return
			}
			last = "events: " + last
		}
		if time.Now().After(deadline) {
			if len(last) > 2000 {
				last = last[:2000] + "..."
			}
			t.Fatalf("the cache does not equal the server after %v:\n%s", d, last)
		}
		time.Sleep(50 * time.Millisecond) // polling the cache's content, not synchronising goroutines
	}
}

// TestCuratorCacheAtScaleDroppedConnection: a CuratorCache of a large tree (make soak:
// 100 101 nodes) loses its connection; go-zookeeper reconnects with the same session and
// sends the watches again (in 128 KB batches: some 60 at 100 101 nodes). The server
// holds every watch again, every change made after the reconnection is reported once,
// nothing else is, and the cache equals the server's tree.
func TestCuratorCacheAtScaleDroppedConnection(t *testing.T) {
	leakcheck.Check(t)
	s := newScaleSetup(t, 30*time.Second)
	sid := s.cc.SessionID()
	mark := len(s.rec.all())

	t0 := time.Now()
	s.proxy.DropConnections()
	s.waitState(t, framework.Suspended, time.Minute)
	s.waitState(t, framework.Reconnected, 5*time.Minute)
	reconnected := time.Since(t0)
	require.Equal(t, sid, s.cc.SessionID(), "the same session")
	s.requireWatches(t, 2*len(s.paths))
	watches := time.Since(t0)

	want := changeTree(t, s.admin, s.paths, "after-drop")
	tree := readScaleTree(t, s.admin)
	s.waitEqual(t, tree, 20*time.Minute)
	heard := time.Since(t0)
	require.Equal(t, want, dataEvents(s.rec, mark), "every change reported once, nothing else")
	s.rec.checkConsistent(t)
	s.requireWatches(t, 2*len(tree))
	t.Logf("%d nodes, connection dropped: reconnected in %.1f s, all %d watches on the server again at %.1f s, "+
		"the %d changes made then heard and the cache equal to the server at %.1f s",
		len(s.paths), reconnected.Seconds(), 2*len(s.paths), watches.Seconds(), len(want), heard.Seconds())
}

// TestCuratorCacheAtScaleSessionExpiry: the cache's client of a large tree (make soak:
// 100 101 nodes) is cut off until the server expires its session, the tree changes
// meanwhile (updates, creations, deletions, a new parent, a parent deleted with its
// children); once the client reaches the server again with a new session the cache
// rebuilds and reports exactly the differences between the tree before and after, and
// equals the server's tree; the watches are all set again on the new session.
func TestCuratorCacheAtScaleSessionExpiry(t *testing.T) {
	leakcheck.Check(t)
	// Long enough that the session survives the first build of a large tree on a loaded
	// machine; short for the fast profile's small tree.
	timeout := 4 * time.Second
	if *scaleNodes > 10_000 {
		timeout = 10 * time.Second
	}
	s := newScaleSetup(t, timeout)
	sid := s.cc.SessionID()
	// An ephemeral node of the cache's session shows when the server expires it.
	_, err := s.cc.Create(testutil.Context(t, 30*time.Second), "/scale-expiry-marker", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	before := cacheContent(s.cache)
	mark := len(s.rec.all())

	t0 := time.Now()
	s.proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(s.srv.Addr())
		return err == nil && len(owners[sid]) == 0
	}, 2*time.Minute, 100*time.Millisecond, "the server did not expire the cache's session")
	expired := time.Since(t0)
	want := changeTree(t, s.admin, s.paths, "while-expired")
	tree := readScaleTree(t, s.admin)
	require.Equal(t, want, diffEvents(before, tree), "the changes made (test's own check)")

	t1 := time.Now()
	s.proxy.Heal()
	s.waitState(t, framework.Lost, 2*time.Minute)
	s.waitState(t, framework.Reconnected, 5*time.Minute)
	require.NotEqual(t, sid, s.cc.SessionID(), "a new session")
	s.waitEqual(t, tree, 20*time.Minute)
	rebuilt := time.Since(t1)
	require.Equal(t, want, dataEvents(s.rec, mark), "exactly the differences reported, each once")
	s.rec.checkConsistent(t)
	s.requireWatches(t, 2*len(tree))
	watches := time.Since(t1)

	// The watches work: a later change is heard.
	p := s.paths[len(s.paths)/2]
	if _, ok := tree[p]; !ok {
		p = s.paths[len(s.paths)/2+1]
	}
	st, err := s.admin.Set(p, scaleData("later"), -1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, ok := s.cache.Get(p)
		return ok && d.Stat.Mzxid == st.Mzxid
	}, time.Minute, 10*time.Millisecond, "a change after the rebuild is heard")
	t.Logf("%d nodes, session expired (%.1f s after the cut): after the heal the cache rebuilt and reported the %d differences in %.1f s, "+
		"all %d watches on the server again at %.1f s", len(s.paths), expired.Seconds(), len(want), rebuilt.Seconds(), 2*len(tree), watches.Seconds())
}

// diffEvents is what a cache must report to go from before to after.
func diffEvents(before, after map[string]cache.ChildData) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(after)) {
		b, ok := before[p]
		switch {
		case !ok:
			out = append(out, "NODE_CREATED "+p)
		case b.Stat.Czxid != after[p].Stat.Czxid:
			out = append(out, "NODE_DELETED "+p, "NODE_CREATED "+p)
		case b.Stat.Mzxid != after[p].Stat.Mzxid:
			out = append(out, "NODE_CHANGED "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, "NODE_DELETED "+p)
		}
	}
	sort.Strings(out)
	return out
}
