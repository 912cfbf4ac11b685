package wire

import (
	"maps"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"
)

// WatchKinds is a set of the one-shot watches a session holds on a path.
type WatchKinds uint8

// The kinds of one-shot watches, as the Java client keeps them: a data watch is left by
// getData, and by exists on a node that exists (the server keeps both alike); an exist
// watch by exists on a node that does not; a child watch by getChildren.
const (
	WatchData WatchKinds = 1 << iota
	WatchExist
	WatchChild
)

// registry is a Client's watches: those the server confirmed (a reply without error),
// until an event ends them, removeWatches removes them or the session ends. It is what
// a resumed session sets again (setWatches). It is changed on the reading goroutine of
// the Conn (a reply's hook, an event), in the order the server sent them.
type registry struct {
	mu                              sync.Mutex
	data, exist, child              map[string]bool
	persistent, persistentRecursive map[string]bool
}

func (g *registry) add(kind WatchKinds, path string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.oneShot(kind)
	if *m == nil {
		*m = map[string]bool{}
	}
	(*m)[path] = true
}

func (g *registry) addPersistent(mode AddWatchMode, path string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := &g.persistent
	if mode == AddWatchPersistentRecursive {
		m = &g.persistentRecursive
	}
	if *m == nil {
		*m = map[string]bool{}
	}
	(*m)[path] = true
}

func (g *registry) oneShot(kind WatchKinds) *map[string]bool {
	switch kind {
	case WatchData:
		return &g.data
	case WatchExist:
		return &g.exist
	default:
		return &g.child
	}
}

// takeLocked removes path's watches of the kinds in ks and returns those there were.
func (g *registry) takeLocked(path string, ks WatchKinds) WatchKinds {
	var got WatchKinds
	for _, k := range []WatchKinds{WatchData, WatchExist, WatchChild} {
		if ks&k == 0 {
			continue
		}
		m := g.oneShot(k)
		if (*m)[path] {
			delete(*m, path)
			got |= k
		}
	}
	return got
}

// fired removes the one-shot watches a node event ends, as the server fires them, and
// returns them: a creation or a data change ends the data and exist watches, a change
// of the children list the child watch, a deletion all three.
func (g *registry) fired(ev Event) WatchKinds {
	var ks WatchKinds
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDataChanged:
		ks = WatchData | WatchExist
	case zk.EventNodeChildrenChanged:
		ks = WatchChild
	case zk.EventNodeDeleted:
		ks = WatchData | WatchExist | WatchChild
	default:
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.takeLocked(ev.Path, ks)
}

// removed removes the watches removeWatches of typ on path removed on the server, and
// returns the events the Java client makes for them (the server sends none).
func (g *registry) removed(path string, typ WatcherType, sid int64) []Notice {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Notice
	if typ == WatcherData || typ == WatcherAny {
		if ks := g.takeLocked(path, WatchData|WatchExist); ks != 0 {
			out = append(out, Notice{Type: EventDataWatchRemoved, State: zk.StateSyncConnected, Path: path, Session: sid, Ended: ks})
		}
	}
	if typ == WatcherChildren || typ == WatcherAny {
		if ks := g.takeLocked(path, WatchChild); ks != 0 {
			out = append(out, Notice{Type: EventChildWatchRemoved, State: zk.StateSyncConnected, Path: path, Session: sid, Ended: ks})
		}
	}
	p := typ == WatcherPersistent || typ == WatcherAny
	r := typ == WatcherPersistentRecursive || typ == WatcherAny
	if (p && g.persistent[path]) || (r && g.persistentRecursive[path]) {
		if p {
			delete(g.persistent, path)
		}
		if r {
			delete(g.persistentRecursive, path)
		}
		out = append(out, Notice{Type: EventPersistentWatchRemoved, State: zk.StateSyncConnected, Path: path, Session: sid})
	}
	return out
}

// snapshot returns the watches to set again on a resumed session.
func (g *registry) snapshot() Watches {
	g.mu.Lock()
	defer g.mu.Unlock()
	keys := func(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
	return Watches{Data: keys(g.data), Exist: keys(g.exist), Child: keys(g.child),
		Persistent: keys(g.persistent), PersistentRecursive: keys(g.persistentRecursive)}
}

// drop removes every watch, for a session that ended, and returns a notice for each
// path that had one, in path order: the Java client tells each of its watchers of the
// expiry; here each path is told with EventNotWatching (go-zookeeper's event for a watch
// that ended without a change) and the kinds that ended.
func (g *registry) drop(sid int64, cause error) []Notice {
	g.mu.Lock()
	defer g.mu.Unlock()
	ended := map[string]WatchKinds{}
	persistent := map[string]bool{}
	for _, k := range []WatchKinds{WatchData, WatchExist, WatchChild} {
		for p := range *g.oneShot(k) {
			ended[p] |= k
		}
	}
	for p := range g.persistent {
		persistent[p] = true
	}
	for p := range g.persistentRecursive {
		persistent[p] = true
	}
	paths := slices.Collect(maps.Keys(ended))
	for p := range persistent {
		if _, ok := ended[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	out := make([]Notice, 0, len(paths))
	for _, p := range paths {
		out = append(out, Notice{Type: zk.EventNotWatching, State: zk.StateExpired, Path: p, Session: sid, Ended: ended[p], Err: cause})
	}
	g.data, g.exist, g.child, g.persistent, g.persistentRecursive = nil, nil, nil, nil, nil
	return out
}

// Watching returns the one-shot watches the session holds on path (with the chroot's
// prefix stripped, as the Client's requests take it): those the server confirmed and no
// event, removal or expiry has ended.
func (c *Client) Watching(path string) WatchKinds {
	full := c.root().full(path)
	c.reg.mu.Lock()
	defer c.reg.mu.Unlock()
	var ks WatchKinds
	for _, k := range []WatchKinds{WatchData, WatchExist, WatchChild} {
		if (*c.reg.oneShot(k))[full] {
			ks |= k
		}
	}
	return ks
}
