package cache

import (
	"context"
	"iter"
	"maps"
	"slices"
	"sync"

	"github.com/zoocurator/zoocurator/framework"
)

// CuratorCache is the API of Curator 5's CuratorCache, which Curator recommends over
// NodeCache, PathChildrenCache and TreeCache: a cache of the node at a path and (unless
// SingleNodeCache) of every node below it, with one kind of listener for creations,
// changes and deletions.
//
// Curator's CuratorCache follows the subtree with one persistent recursive watch
// (ZooKeeper 3.6's addWatch). go-zookeeper v1.0.4, the client this module is built on,
// cannot send addWatch, so this CuratorCache runs on this package's tree cache engine,
// with a data watch per node and a child watch per parent: what Curator's own bridge
// does on servers older than 3.6 (CuratorCacheBridge over TreeCache). Listeners get the
// same events either way; the difference is the number of watches the server keeps (two
// per node rather than one for the subtree) and that changes coalesce as with every
// cache of this package (a node changed twice between two reads is one NodeChanged).
//
// Listeners hear NodeCreated (Data is the node), NodeChanged (Old and Data), NodeDeleted
// (Data is the node as last cached) and Initialized once the nodes there at Start were
// read and reported as created. Connection events are not sent (Curator's CuratorCache
// has none; listen to the client), nor are nodes the cache may not read (their ACL
// denies this client): such a node is not held. NewCuratorCacheListener builds a
// listener from functions per kind of event, as Curator's CuratorCacheListener.builder.
//
// A CuratorCache is safe for concurrent use.
type CuratorCache struct {
	e *engine
}

// CuratorCacheOption configures a CuratorCache (Curator's CuratorCache.Options).
type CuratorCacheOption interface{ applyCurator(*options) }

type curatorOption func(*options)

func (o curatorOption) applyCurator(opts *options) { o(opts) }

// SingleNodeCache caches the node at the path alone, not its descendants (Curator's
// SINGLE_NODE_CACHE).
func SingleNodeCache() CuratorCacheOption {
	return curatorOption(func(o *options) { o.maxDepth = 0 })
}

// DoNotClearOnClose keeps the cached nodes after Close, for Get, Size and All (Curator's
// DO_NOT_CLEAR_ON_CLOSE). By default Close empties the cache.
func DoNotClearOnClose() CuratorCacheOption {
	return curatorOption(func(o *options) { o.keep = true })
}

// NewCuratorCache returns a cache of the node at path and the nodes below it. It checks
// its arguments (a nil client, an invalid path) but does not talk to ZooKeeper: call
// Start. The node need not exist: the cache waits for it.
func NewCuratorCache(c *framework.Client, path string, opts ...CuratorCacheOption) (*CuratorCache, error) {
	o := defaultOptions(PostInitializedEvent)
	for _, opt := range opts {
		if opt != nil {
			opt.applyCurator(&o)
		}
	}
	e, err := newEngine(engineConfig{
		name: "curator cache", client: c, root: path, opts: o, emitRoot: true,
		types: [numKinds]EventType{
			kAdded: NodeCreated, kUpdated: NodeChanged, kRemoved: NodeDeleted, kInitialized: Initialized,
		},
	})
	if err != nil {
		return nil, err
	}
	return &CuratorCache{e: e}, nil
}

// Start starts following the path and returns at once: the nodes already there are
// reported as NodeCreated, then Initialized. Starting twice returns ErrAlreadyStarted,
// starting after Close ErrClosed. ctx bounds nothing after Start returns.
func (cc *CuratorCache) Start(ctx context.Context) error { return cc.e.start(ctx) }

// Close stops the cache and waits for its goroutines: no listener is called after it
// returns. The cache is then empty, unless DoNotClearOnClose. Close may be called more
// than once, also from a listener: there it returns without waiting for the listener's
// own goroutine, which ends once the listener returns (a Close from anywhere else waits
// for it).
func (cc *CuratorCache) Close() error { return cc.e.close() }

// Path returns the path the cache follows.
func (cc *CuratorCache) Path() string { return cc.e.cfg.root }

// Get returns a copy of the cached node at path, and false when the cache holds no such
// node.
func (cc *CuratorCache) Get(path string) (ChildData, bool) { return cc.e.get(path) }

// Size returns the number of nodes the cache holds.
func (cc *CuratorCache) Size() int {
	cc.e.mu.RLock()
	defer cc.e.mu.RUnlock()
	return len(cc.e.nodes)
}

// All returns the cached nodes in path order (Curator's stream()), copies of what the
// cache held when All was called.
func (cc *CuratorCache) All() iter.Seq[ChildData] {
	snap := cc.e.snapshot()
	return func(yield func(ChildData) bool) {
		for _, p := range slices.Sorted(maps.Keys(snap)) {
			if !yield(snap[p]) {
				return
			}
		}
	}
}

// AddListener registers fn to be called with each event (NodeCreated, NodeChanged,
// NodeDeleted, Initialized), one call at a time, in order, on a goroutine the cache owns;
// NewCuratorCacheListener builds such a function. It returns a function that unregisters
// fn. A listener added after Close is never called.
func (cc *CuratorCache) AddListener(fn func(Event)) (remove func()) { return cc.e.addListener(fn) }

// CuratorCacheListenerBuilder builds a CuratorCache listener from functions per kind of
// event (Curator's CuratorCacheListenerBuilder). Each For method adds a function; an
// event goes to every function added for its kind, in the order they were added.
type CuratorCacheListenerBuilder struct {
	fns       []func(Event)
	afterInit bool
}

// NewCuratorCacheListener starts building a listener (Curator's
// CuratorCacheListener.builder()).
func NewCuratorCacheListener() *CuratorCacheListenerBuilder {
	return &CuratorCacheListenerBuilder{}
}

func (b *CuratorCacheListenerBuilder) add(fn func(Event)) *CuratorCacheListenerBuilder {
	b.fns = append(b.fns, fn)
	return b
}

// ForAll adds fn for every creation, change and deletion: old is nil for a creation,
// node is nil for a deletion (old is then the node as last cached).
func (b *CuratorCacheListenerBuilder) ForAll(fn func(t EventType, old, node *ChildData)) *CuratorCacheListenerBuilder {
	return b.add(func(e Event) {
		switch e.Type {
		case NodeCreated:
			fn(e.Type, nil, e.Data)
		case NodeChanged:
			fn(e.Type, e.Old, e.Data)
		case NodeDeleted:
			fn(e.Type, e.Data, nil)
		}
	})
}

// ForCreates adds fn for each node created.
func (b *CuratorCacheListenerBuilder) ForCreates(fn func(node ChildData)) *CuratorCacheListenerBuilder {
	return b.add(func(e Event) {
		if e.Type == NodeCreated {
			fn(*e.Data)
		}
	})
}

// ForChanges adds fn for each change of a node's data.
func (b *CuratorCacheListenerBuilder) ForChanges(fn func(old, node ChildData)) *CuratorCacheListenerBuilder {
	return b.add(func(e Event) {
		if e.Type == NodeChanged {
			fn(*e.Old, *e.Data)
		}
	})
}

// ForCreatesAndChanges adds fn for creations (old is nil) and changes.
func (b *CuratorCacheListenerBuilder) ForCreatesAndChanges(fn func(old *ChildData, node ChildData)) *CuratorCacheListenerBuilder {
	return b.add(func(e Event) {
		switch e.Type {
		case NodeCreated:
			fn(nil, *e.Data)
		case NodeChanged:
			fn(e.Old, *e.Data)
		}
	})
}

// ForDeletes adds fn for each node deleted; it gets the node as last cached.
func (b *CuratorCacheListenerBuilder) ForDeletes(fn func(old ChildData)) *CuratorCacheListenerBuilder {
	return b.add(func(e Event) {
		if e.Type == NodeDeleted {
			fn(*e.Data)
		}
	})
}

// ForInitialized adds fn for the Initialized event: the nodes there at Start have all
// been reported.
func (b *CuratorCacheListenerBuilder) ForInitialized(fn func()) *CuratorCacheListenerBuilder {
	return b.add(func(e Event) {
		if e.Type == Initialized {
			fn()
		}
	})
}

// AfterInitialized makes the listener ignore the creations reported before Initialized
// (the nodes already there at Start), as Curator's afterInitialized: it hears only what
// changes afterwards, and the Initialized event itself.
func (b *CuratorCacheListenerBuilder) AfterInitialized() *CuratorCacheListenerBuilder {
	b.afterInit = true
	return b
}

// Build returns the listener, for CuratorCache.AddListener. The builder may be used
// again; the listener built does not change. Give each cache a listener of its own: one
// built with AfterInitialized remembers whether its cache was initialized.
func (b *CuratorCacheListenerBuilder) Build() func(Event) {
	fns := slices.Clone(b.fns)
	if !b.afterInit {
		return func(e Event) {
			for _, fn := range fns {
				fn(e)
			}
		}
	}
	var mu sync.Mutex // the cache calls one at a time; guarded all the same
	initialized := false
	return func(e Event) {
		mu.Lock()
		if e.Type == Initialized {
			initialized = true
		}
		skip := !initialized
		mu.Unlock()
		if skip {
			return
		}
		for _, fn := range fns {
			fn(e)
		}
	}
}
