package cache

import (
	"context"

	"github.com/zoocurator/zoocurator/framework"
)

// TreeCache keeps a whole subtree current: the root and its descendants down to the
// maximum depth, as chosen by the selector (Curator's TreeCache). The root need not
// exist: the cache waits for it. Listeners hear TreeNodeAdded, TreeNodeUpdated and
// TreeNodeRemoved (a parent is added before its children and removed after them),
// Initialized once the first full read is in (under the default PostInitializedEvent),
// and the connection events ConnectionSuspended, ConnectionReconnected and
// ConnectionLost.
//
// The cache holds each node once, with a data watch and (when its children are followed)
// a child watch; it starts no goroutine per node.
//
// A TreeCache is safe for concurrent use.
type TreeCache struct{ e *engine }

// NewTreeCache returns a cache of the subtree at path. It checks its arguments (a nil
// client, an invalid path, a negative depth, a nil selector, an unknown start mode) but
// does not talk to ZooKeeper: call Start.
func NewTreeCache(c *framework.Client, path string, opts ...TreeOption) (*TreeCache, error) {
	o := defaultOptions(PostInitializedEvent)
	for _, opt := range opts {
		if opt != nil {
			opt.applyTree(&o)
		}
	}
	e, err := newEngine(engineConfig{
		name: "tree cache", client: c, root: path, opts: o, emitRoot: true,
		types: [numKinds]EventType{
			kAdded: TreeNodeAdded, kUpdated: TreeNodeUpdated, kRemoved: TreeNodeRemoved, kInitialized: Initialized,
			kSuspended: ConnectionSuspended, kReconnected: ConnectionReconnected, kLost: ConnectionLost,
			kUnreadable: Unreadable,
		},
	})
	if err != nil {
		return nil, err
	}
	return &TreeCache{e: e}, nil
}

// Start starts following the subtree. Under BuildInitialCache it returns once the whole
// subtree was read (or the root was found missing), or with an error wrapping ctx.Err()
// as soon as ctx ends — the cache is then closed, without waiting for a listener still busy with an event it sent (that
// listener hears nothing more once its call returns; Close waits for it).
// Starting twice returns ErrAlreadyStarted, starting after Close ErrClosed.
func (tc *TreeCache) Start(ctx context.Context) error { return tc.e.start(ctx) }

// Close stops the cache and waits for its goroutines: no listener is called after it
// returns. The cache is then empty. Close may be called more than once, also from a
// listener: there it returns without waiting for the listener's own goroutine, which ends
// once the listener returns (a Close from anywhere else waits for it).
func (tc *TreeCache) Close() error { return tc.e.close() }

// Path returns the root of the subtree the cache follows.
func (tc *TreeCache) Path() string { return tc.e.cfg.root }

// Get returns a copy of the cached node at path, and false when the cache holds no such
// node.
func (tc *TreeCache) Get(path string) (ChildData, bool) { return tc.e.get(path) }

// Children returns copies of the cached children of the node at path, by name, and false
// when the cache holds no node at path.
func (tc *TreeCache) Children(path string) (map[string]ChildData, bool) {
	return tc.e.children(path)
}

// Snapshot returns copies of every cached node, by path.
func (tc *TreeCache) Snapshot() map[string]ChildData { return tc.e.snapshot() }

// AddListener registers fn to be called with each event, one call at a time, in order,
// on a goroutine the cache owns. It returns a function that unregisters fn. A listener
// added after Close is never called.
func (tc *TreeCache) AddListener(fn func(Event)) (remove func()) { return tc.e.addListener(fn) }
