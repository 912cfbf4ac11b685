// Package cache keeps local copies of ZooKeeper data current: Curator's NodeCache,
// PathChildrenCache and TreeCache in Go, and Curator 5's CuratorCache API.
//
//   - A NodeCache follows one node: its data and Stat, or that it does not exist.
//   - A PathChildrenCache follows the children of one node (not the node itself).
//   - A TreeCache follows a whole subtree, down to a maximum depth, optionally pruned by a
//     Selector.
//   - A CuratorCache follows a node and its subtree (or the node alone) with Curator 5's
//     API: one listener for creations, changes and deletions, built per kind of event.
//     It runs on the tree cache's watches (go-zookeeper cannot send ZooKeeper 3.6's
//     persistent recursive watches), as Curator's own bridge does for older servers.
//
// Each cache is created with its constructor, started with Start and stopped with Close.
// Reads (Current, Get, Children, Snapshot) never talk to ZooKeeper: they return copies of
// what the cache holds, which callers may modify freely. Listeners registered with
// AddListener hear every change the cache sees, one call at a time, in the order the
// cache saw them, on a goroutine the cache owns; AddListener returns a function that
// unregisters the listener.
//
// # How the cache follows the server
//
// The cache sets a data watch on every node it holds and a child watch on every node whose
// children it holds; when the node it follows does not exist, it sets an exists watch and
// waits for it to be created. When a watch fires the cache reads the node again and
// compares what it reads with what it holds: a different czxid means the node was deleted
// and created again, which is reported as a removal followed by an addition (NodeDeleted
// then NodeCreated, ChildRemoved then ChildAdded, TreeNodeRemoved then TreeNodeAdded); a
// different mzxid with the same czxid is an update. A change that leaves the mzxid alone
// updates the cached Stat without an event: a child created or deleted below a node whose
// children the cache follows changes its pzxid, cversion and numChildren, which the
// cache's listing of the children (it returns the node's Stat) brings in. A node whose
// children the cache does not follow (a NodeCache's node, a PathChildrenCache's
// children, a node at a TreeCache's maximum depth or whose children its Selector does not
// traverse, a SingleNodeCache's node) sets no child watch: its Stat is the one read with
// its data, current for every change of the data but for pzxid, cversion and numChildren,
// which are those of the last read (as in Curator's caches). Several changes
// between two reads are seen as one: ZooKeeper's watches report that something changed,
// not every intermediate state, so listeners see a consistent history of the states the
// cache read, not necessarily every write.
//
// One goroutine per cache owns the cached state and does all the reading, so events for
// one path always come in a consistent order: a node is added before it is updated or
// removed, never added twice without a removal in between, and a parent is added before
// its children and removed after them. No goroutine, channel or select waits on a watch:
// the client tells the cache when one fires (framework.Watch.Handle) and the cache's own
// goroutine acts on it, so a cache runs two goroutines (that one and its listeners') for
// any number of nodes. The client holds one watch per node and kind (data, children),
// shared by every cache and recipe of that client.
//
// # Connection loss and session expiry
//
// While the client is disconnected the cache keeps what it holds (it may be stale) and
// PathChildrenCache and TreeCache listeners hear ConnectionSuspended and ConnectionLost
// as the client reports them. When the client is connected again (Reconnected, with the
// same session or a new one) listeners hear ConnectionReconnected, and the cache reads
// again every node it holds, sets its watches again where the old ones are gone (on a
// new session, all of them), and reports the differences as ordinary events: nothing
// that changed while the client was away is silently missed, though several changes to
// one node collapse into one event. Reads that fail for a connection-class reason are
// retried with backoff until they succeed, the cache is closed, or the client is closed;
// a node that cannot be read for another reason (its ACL denies this client: NoAuth) is
// reported as Unreadable with its error and not held: a cached node that can no longer be
// read (replaced by a node this client may not read, say) is reported removed first. The
// cache reads such a node again every 10 seconds (and when its parent's children change,
// and after a reconnection) and holds it once it can read it. Initialized (and the return of Start
// under BuildInitialCache) means every node the cache should hold was read or reported
// Unreadable.
//
// # Nodes this client may not read
//
// ZooKeeper (3.8) tells a watch nothing of a change to a node its client may not read
// when the change is made (a new data, a deletion, a creation: an exists watch on a
// missing node that is created with an ACL denying this client READ does not fire), and
// drops that watch; setACL fires no watch at all. Without polling every node it holds a
// cache cannot know of such changes, so:
//
//   - A node whose ACL is narrowed to deny this client READ after the cache read it is
//     held as last read (its data and Stat), though it may have changed since, until a
//     watch of the cache's fires that makes it read the node again, or a reconnection
//     (the cache then reads every node it holds again). Its deletion is seen where the
//     cache follows its parent's children (a PathChildrenCache's child, a TreeCache's
//     node below the root): the parent's child watch fires. A NodeCache's node, or a
//     TreeCache's root, deleted while unreadable is held until a reconnection, and so
//     is a node made again at its path meanwhile. Once the cache reads it again and is
//     denied, the node is reported removed, then Unreadable, and read again every 10 s.
//   - A missing node the cache waits for (a NodeCache's node, a TreeCache's root) that
//     is created unreadable is reported missing until a reconnection (and stays so if
//     its ACL is then opened, until the same); a child created unreadable under a node
//     whose children the cache follows is reported Unreadable at once (the parent's
//     child watch fires).
//
// go-zookeeper cannot remove a watch: after Close, the watches the cache set stay
// registered in the client until they fire or the session ends (the client shares one per
// node and kind among all its users), but nothing of the closed cache is held by them:
// Close withdraws the cache from each.
package cache
