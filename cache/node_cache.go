package cache

import (
	"context"

	"github.com/zoocurator/zoocurator/framework"
)

// NodeCache keeps one node's data and Stat current (Curator's NodeCache). The node need
// not exist: the cache waits for it and reports it when it is created. Listeners hear
// NodeCreated, NodeChanged and NodeDeleted (and Initialized under PostInitializedEvent);
// a NodeCache sends no connection events (listen to the client for those).
//
// Its Stat is the one read with the node's data, as in Curator's NodeCache: it is read
// again when the data changes, when the node is created or deleted, and after a
// reconnection. A NodeCache sets no child watch, so a child created or deleted below the
// node (which changes the node's pzxid, cversion and numChildren on the server, not its
// data) is not heard: those three fields are as of the last read. Use a TreeCache with
// WithMaxDepth(1) to follow them.
//
// A NodeCache is safe for concurrent use.
type NodeCache struct{ e *engine }

// NewNodeCache returns a cache of the node at path. It checks its arguments (a nil
// client, an invalid path) but does not talk to ZooKeeper: call Start.
func NewNodeCache(c *framework.Client, path string, opts ...NodeOption) (*NodeCache, error) {
	o := defaultOptions(NormalStart)
	for _, opt := range opts {
		if opt != nil {
			opt.applyNode(&o)
		}
	}
	o.maxDepth = 0
	e, err := newEngine(engineConfig{
		name: "node cache", client: c, root: path, opts: o, emitRoot: true,
		types: [numKinds]EventType{kAdded: NodeCreated, kUpdated: NodeChanged, kRemoved: NodeDeleted, kInitialized: Initialized, kUnreadable: Unreadable},
	})
	if err != nil {
		return nil, err
	}
	return &NodeCache{e: e}, nil
}

// Start starts following the node. Under BuildInitialCache it returns once the node was
// read (or found missing), or with an error wrapping ctx.Err() as soon as ctx ends — the
// cache is then closed, without waiting for a listener still busy with an event it sent (that
// listener hears nothing more once its call returns; Close waits for it).
// Starting twice returns ErrAlreadyStarted, starting after Close ErrClosed.
func (nc *NodeCache) Start(ctx context.Context) error { return nc.e.start(ctx) }

// Close stops the cache and waits for its goroutines: no listener is called after it
// returns. The cache is then empty. Close may be called more than once, also from a
// listener: there it returns without waiting for the listener's own goroutine, which ends
// once the listener returns (a Close from anywhere else waits for it).
func (nc *NodeCache) Close() error { return nc.e.close() }

// Path returns the path of the node the cache follows.
func (nc *NodeCache) Path() string { return nc.e.cfg.root }

// Current returns a copy of the node as cached, and false when it does not exist (or is
// not read yet).
func (nc *NodeCache) Current() (ChildData, bool) { return nc.e.get(nc.e.cfg.root) }

// AddListener registers fn to be called with each event, one call at a time, in order,
// on a goroutine the cache owns. It returns a function that unregisters fn. A listener
// added after Close is never called.
func (nc *NodeCache) AddListener(fn func(Event)) (remove func()) { return nc.e.addListener(fn) }
