package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
)

// A cache operation starts a cache of a small tree, then another client changes the tree
// (a child added under a cached node, data set, a node deleted) while the cache follows.
// Checks: once things settle, the cache holds what the server holds for every node this
// client may read — data and Stat —, its events replay to that state with each change
// told once (no node added twice, no removal of a node not held), and events after the
// initial read come in the server's order (by zxid).

// xcache is what the cache operations need of a cache.
type xcache struct {
	start func(ctx context.Context) error
	close func() error
	// listen registers the event listener.
	listen func(fn func(cache.Event))
	// held returns what the cache holds, by path.
	held func() map[string]cache.ChildData
	// scope: "tree" (the root and every node below), "children" (the root's children),
	// "node" (the root alone).
	scope string
}

// xcacheTree is the tree the cache operations start from, under <base>/c.
var xcacheTree = []struct{ path, data string }{
	{"/c", "root"}, {"/c/a", "a"}, {"/c/a/x", "x"}, {"/c/b", "b"}, {"/c/b/z", "z"},
}

func cacheOp(name string, mk func(c *framework.Client, root string) (*xcache, error)) xop {
	return xop{name: name, listeners: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		for _, n := range xcacheTree {
			if _, err := r.advCreate(ctx, r.w.base+n.path, []byte(n.data)); err != nil {
				return nil, err
			}
		}
		root := r.w.base + "/c"
		xc, err := mk(r.w.victim, root)
		if err != nil {
			return nil, err
		}
		if xc.scope == "children" {
			root = r.w.base + "/c"
		}
		rec := &eventLog{}
		xc.listen(func(ev cache.Event) {
			rec.add(ev)
			r.listenerHook()
		})
		closeOnce := onceErr(xc.close)
		target := r.w.base + "/c/a/x"
		if xc.scope == "children" {
			target = r.w.base + "/c/a"
		}
		if xc.scope == "node" {
			target = root
		}
		return &xround{
			call: func(ctx context.Context) error {
				if err := xc.start(ctx); err != nil {
					return err
				}
				rec.markStarted()
				// Another client changes the tree while the cache follows it (not bound
				// to the operation's context: the changes are not the victim's).
				return changeTree(r, root)
			},
			after: func(ctx context.Context, err error) []string {
				if err != nil || r.closedEarly.Load() {
					return nil
				}
				restoreReadable(ctx, r)
				return checkCache(ctx, r, xc, root, rec)
			},
			close:      closeOnce,
			undo:       func(context.Context) error { return closeOnce() },
			undoCloses: true,
			target:     func() string { return target },
			mayTake:    func(string) bool { return false },
		}, nil
	}}
}

// changeTree adds a child under a cached node, sets data, deletes a node and sets the
// root's data, as another client.
func changeTree(r *xrun, root string) error {
	ctx := r.bg
	if _, err := r.advCreate(ctx, r.w.base+"/c/a/y", []byte("y")); err != nil && !errors.Is(err, framework.ErrNoNode) {
		return fmt.Errorf("explorer: change the cached tree: %w", err)
	}
	if _, err := r.w.adv.SetData(ctx, r.w.base+"/c/b", []byte("b2"), -1); err != nil && !errors.Is(err, framework.ErrNoNode) {
		return fmt.Errorf("explorer: change the cached tree: %w", err)
	}
	r.forgetAdv(r.w.base + "/c/b/z")
	if err := r.w.adv.Delete(ctx, r.w.base+"/c/b/z"); err == nil {
		r.logAdv(false, r.w.base+"/c/b/z", []byte("z"))
	} else if !errors.Is(err, framework.ErrNoNode) {
		return fmt.Errorf("explorer: change the cached tree: %w", err)
	}
	if _, err := r.w.adv.SetData(ctx, root, []byte("root2"), -1); err != nil && !errors.Is(err, framework.ErrNoNode) {
		return fmt.Errorf("explorer: change the cached tree: %w", err)
	}
	return nil
}

// restoreReadable makes every node the victim may not read readable again (a leaf deleted
// and made again with the same data, in one transaction; a node with children by its
// ACL): a cache must then hold it.
func restoreReadable(ctx context.Context, r *xrun) {
	for _, n := range r.snapshot(ctx) {
		acl, _, err := r.w.adv.GetACL(ctx, n.path)
		if err != nil || slices.ContainsFunc(acl, func(a zk.ACL) bool { return a.Scheme == "world" && a.Perms&zk.PermRead != 0 }) {
			continue
		}
		kids, _, _ := r.w.adv.Children(ctx, n.path)
		if len(kids) > 0 { // made readable in place (which fires no watch)
			_, _ = r.w.adv.SetACL(ctx, n.path, zk.WorldACL(zk.PermAll), -1)
			continue
		}
		if _, err := r.w.adv.Transaction(ctx, framework.DeleteOp(n.path, -1),
			framework.CreateOp(n.path, n.data, modeOf(n.stat), zk.WorldACL(zk.PermAll))); err == nil {
			if st, err := r.w.adv.Exists(ctx, n.path); err == nil && st != nil {
				r.recordAdv(n.path, st)
			}
		}
	}
}

// eventLog records a cache's events.
type eventLog struct {
	mu      sync.Mutex
	events  []cache.Event
	started int // events before Start returned
}

func (l *eventLog) add(ev cache.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) markStarted() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started = len(l.events)
}

func (l *eventLog) all() ([]cache.Event, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events), l.started
}

// serverView reads what a cache of root in scope should hold: every node this client
// (the victim) may read, with data and Stat.
func serverView(ctx context.Context, r *xrun, root, scope string) (map[string]cache.ChildData, error) {
	if err := r.w.adv.Sync(ctx, root); err != nil {
		return nil, err
	}
	out := map[string]cache.ChildData{}
	var walk func(p string, depth int) error
	walk = func(p string, depth int) error {
		include := scope == "tree" || (scope == "children" && depth == 1) || (scope == "node" && depth == 0)
		b, st, err := r.w.adv.GetData(ctx, p)
		if errors.Is(err, framework.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		acl, _, err := r.w.adv.GetACL(ctx, p)
		if err != nil && !errors.Is(err, framework.ErrNoNode) {
			return err
		}
		readable := slices.ContainsFunc(acl, func(a zk.ACL) bool { return a.Scheme == "world" && a.Perms&zk.PermRead != 0 })
		if include && readable {
			out[p] = cache.ChildData{Path: p, Data: b, Stat: *st}
		}
		if scope == "node" || (scope == "children" && depth == 1) || !readable {
			return nil
		}
		kids, _, err := r.w.adv.Children(ctx, p)
		if err != nil && !errors.Is(err, framework.ErrNoNode) {
			return err
		}
		for _, k := range kids {
			if err := walk(framework.JoinPath(p, k), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root, 0)
}

// diffCache lists how the cache differs from the server.
func diffCache(held, server map[string]cache.ChildData) []string {
	var out []string
	for p, s := range server {
		h, ok := held[p]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s is on the server (czxid 0x%x), not in the cache", p, s.Stat.Czxid))
		case string(h.Data) != string(s.Data):
			out = append(out, fmt.Sprintf("%s: the cache holds data %q, the server %q", p, h.Data, s.Data))
		case h.Stat != s.Stat:
			out = append(out, fmt.Sprintf("%s: the cache's Stat %s differs from the server's %s", p, statString(h.Stat), statString(s.Stat)))
		}
	}
	for p, h := range held {
		if _, ok := server[p]; !ok {
			out = append(out, fmt.Sprintf("%s is in the cache (czxid 0x%x), not on the server (for this client)", p, h.Stat.Czxid))
		}
	}
	sort.Strings(out)
	return out
}

func statString(s framework.Stat) string {
	return fmt.Sprintf("{czxid 0x%x mzxid 0x%x pzxid 0x%x version %d cversion %d children %d}",
		s.Czxid, s.Mzxid, s.Pzxid, s.Version, s.Cversion, s.NumChildren)
}

// checkCache waits (bounded) until the cache equals the server and its events have
// caught up (a slow listener is told later), then checks both.
func checkCache(ctx context.Context, r *xrun, xc *xcache, root string, rec *eventLog) []string {
	var diff, evs []string
	var server map[string]cache.ChildData
	settled := waitFor(ctx, xSlowListener+10*time.Second, func() bool {
		var err error
		server, err = serverView(ctx, r, root, xc.scope)
		if err != nil {
			diff = []string{err.Error()}
			return false
		}
		diff = diffCache(xc.held(), server)
		events, _ := rec.all()
		evs = checkEvents(events, r.callZxid, server, xc.scope)
		return len(diff) == 0 && !slices.ContainsFunc(evs, func(v string) bool { return strings.HasPrefix(v, "events: their replay holds") })
	})
	var out []string
	if !settled && len(diff) > 0 {
		out = append(out, "cache: it never equalled the server: "+strings.Join(diff, "; "))
	}
	return append(out, evs...)
}

// checkEvents replays the events (from an empty cache) and checks that each change is
// told once, that the replay ends where the server is, and that the changes made after
// since (a creation at its czxid, an update at its mzxid, both after since) are told in
// the server's order.
func checkEvents(events []cache.Event, since int64, server map[string]cache.ChildData, scope string) []string {
	if scope == "node" {
		return nil // a node cache tells changes of one node: nothing to replay across paths
	}
	var out []string
	held := map[string]bool{}
	removed := map[string]map[int64]int{} // path -> czxid -> the event that reported it removed
	var lastZxid int64
	var lastPath string
	for i, ev := range events {
		if ev.Data == nil || ev.Type == cache.Unreadable {
			continue
		}
		p := ev.Data.Path
		var zxid int64
		switch ev.Type {
		case cache.NodeCreated, cache.ChildAdded, cache.TreeNodeAdded:
			if held[p] {
				out = append(out, fmt.Sprintf("events: %s added twice (event %d)", p, i))
			}
			held[p] = true
			zxid = ev.Data.Stat.Czxid
		case cache.NodeChanged, cache.ChildUpdated, cache.TreeNodeUpdated:
			if !held[p] {
				out = append(out, fmt.Sprintf("events: %s updated while not held (event %d)", p, i))
			}
			zxid = ev.Data.Stat.Mzxid
		case cache.NodeDeleted, cache.ChildRemoved, cache.TreeNodeRemoved:
			if !held[p] {
				out = append(out, fmt.Sprintf("events: removal of %s, not held (event %d)", p, i))
			}
			delete(held, p)
			if removed[p] == nil {
				removed[p] = map[int64]int{}
			}
			removed[p][ev.Data.Stat.Czxid] = i
			continue
		default:
			continue
		}
		if zxid > since {
			if zxid < lastZxid {
				out = append(out, fmt.Sprintf("events: the change of %s (zxid 0x%x) told after that of %s (zxid 0x%x): not the server's order",
					p, zxid, lastPath, lastZxid))
			}
			lastZxid, lastPath = zxid, p
		}
	}
	// A node is never made again with its czxid, and no move changes an ACL in place: a
	// node reported removed that the server still holds was never removed.
	for p, d := range server {
		if i, ok := removed[p][d.Stat.Czxid]; ok {
			out = append(out, fmt.Sprintf("events: %s (czxid 0x%x) reported removed (event %d), but the server still holds that node", p, d.Stat.Czxid, i))
		}
	}
	if server != nil {
		want := slices.Sorted(maps.Keys(server))
		got := slices.Sorted(maps.Keys(held))
		if !slices.Equal(want, got) {
			out = append(out, fmt.Sprintf("events: their replay holds %v, the server %v", got, want))
		}
	}
	return out
}

func treeCache(c *framework.Client, root string) (*xcache, error) {
	tc, err := cache.NewTreeCache(c, root)
	if err != nil {
		return nil, err
	}
	return &xcache{start: tc.Start, close: tc.Close, held: tc.Snapshot, scope: "tree",
		listen: func(fn func(cache.Event)) { tc.AddListener(fn) }}, nil
}

func curatorCache(c *framework.Client, root string) (*xcache, error) {
	cc, err := cache.NewCuratorCache(c, root)
	if err != nil {
		return nil, err
	}
	return &xcache{start: cc.Start, close: cc.Close, scope: "tree",
		listen: func(fn func(cache.Event)) { cc.AddListener(fn) },
		held: func() map[string]cache.ChildData {
			out := map[string]cache.ChildData{}
			for d := range cc.All() {
				out[d.Path] = d
			}
			return out
		}}, nil
}

func childrenCache(c *framework.Client, root string) (*xcache, error) {
	pc, err := cache.NewPathChildrenCache(c, root)
	if err != nil {
		return nil, err
	}
	return &xcache{start: pc.Start, close: pc.Close, scope: "children",
		listen: func(fn func(cache.Event)) { pc.AddListener(fn) },
		held: func() map[string]cache.ChildData {
			out := map[string]cache.ChildData{}
			for _, d := range pc.Current() {
				out[d.Path] = d
			}
			return out
		}}, nil
}

func nodeCache(c *framework.Client, root string) (*xcache, error) {
	nc, err := cache.NewNodeCache(c, root)
	if err != nil {
		return nil, err
	}
	return &xcache{start: nc.Start, close: nc.Close, scope: "node",
		listen: func(fn func(cache.Event)) { nc.AddListener(fn) },
		held: func() map[string]cache.ChildData {
			d, ok := nc.Current()
			if !ok {
				return map[string]cache.ChildData{}
			}
			return map[string]cache.ChildData{d.Path: d}
		}}, nil
}

// xcacheOps are the cache operations.
var xcacheOps = []xop{
	cacheOp("tree-cache", treeCache),
	cacheOp("curator-cache", curatorCache),
	cacheOp("path-children-cache", childrenCache),
	cacheOp("node-cache", nodeCache),
}
