package cache

import (
	"context"
	"slices"
	"strings"

	"github.com/zoocurator/zoocurator/framework"
)

// PathChildrenCache keeps the children of one node current, with their data and Stats
// (Curator's PathChildrenCache). The node itself is not cached and need not exist: the
// cache waits for it. Listeners hear ChildAdded, ChildUpdated and ChildRemoved,
// Initialized (under PostInitializedEvent) and the connection events
// ConnectionSuspended, ConnectionReconnected and ConnectionLost. When the node is deleted
// every child is reported removed.
//
// A PathChildrenCache is safe for concurrent use.
type PathChildrenCache struct{ e *engine }

// NewPathChildrenCache returns a cache of the children of path. It checks its arguments
// (a nil client, an invalid path, an unknown start mode) but does not talk to ZooKeeper:
// call Start.
func NewPathChildrenCache(c *framework.Client, path string, opts ...PathChildrenOption) (*PathChildrenCache, error) {
	o := defaultOptions(NormalStart)
	for _, opt := range opts {
		if opt != nil {
			opt.applyPathChildren(&o)
		}
	}
	o.maxDepth = 1
	e, err := newEngine(engineConfig{
		name: "path-children cache", client: c, root: path, opts: o,
		types: [numKinds]EventType{
			kAdded: ChildAdded, kUpdated: ChildUpdated, kRemoved: ChildRemoved, kInitialized: Initialized,
			kSuspended: ConnectionSuspended, kReconnected: ConnectionReconnected, kLost: ConnectionLost,
			kUnreadable: Unreadable,
		},
	})
	if err != nil {
		return nil, err
	}
	return &PathChildrenCache{e: e}, nil
}

// Start starts following the children. Under BuildInitialCache it returns once they were
// read (or the node was found missing), or with an error wrapping ctx.Err() as soon as
// ctx ends — the cache is then closed, without waiting for a listener still busy with an event it sent (that
// listener hears nothing more once its call returns; Close waits for it).
// Starting twice returns ErrAlreadyStarted, starting after Close ErrClosed.
func (pc *PathChildrenCache) Start(ctx context.Context) error { return pc.e.start(ctx) }

// Close stops the cache and waits for its goroutines: no listener is called after it
// returns. The cache is then empty. Close may be called more than once, also from a
// listener: there it returns without waiting for the listener's own goroutine, which ends
// once the listener returns (a Close from anywhere else waits for it).
func (pc *PathChildrenCache) Close() error { return pc.e.close() }

// Path returns the path whose children the cache follows.
func (pc *PathChildrenCache) Path() string { return pc.e.cfg.root }

// Current returns copies of the cached children, sorted by path.
func (pc *PathChildrenCache) Current() []ChildData {
	m, _ := pc.e.children(pc.e.cfg.root)
	out := make([]ChildData, 0, len(m))
	for _, d := range m {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b ChildData) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Get returns a copy of the cached child at path (its full path), and false when there
// is no such child.
func (pc *PathChildrenCache) Get(path string) (ChildData, bool) {
	if path == pc.e.cfg.root || framework.ParentPath(path) != pc.e.cfg.root {
		return ChildData{}, false
	}
	return pc.e.get(path)
}

// AddListener registers fn to be called with each event, one call at a time, in order,
// on a goroutine the cache owns. It returns a function that unregisters fn. A listener
// added after Close is never called.
func (pc *PathChildrenCache) AddListener(fn func(Event)) (remove func()) {
	return pc.e.addListener(fn)
}

// InListener reports whether the caller runs on the goroutine that calls this cache's
// listeners, so that a recipe built on the cache can tell a Close made from one of its
// listeners (which must not wait for that goroutine) from any other.
func (pc *PathChildrenCache) InListener() bool { return pc.e.gs.Inside() }
