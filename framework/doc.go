// Package framework is the ZooKeeper client every recipe of zoocurator is built on: the
// Go counterpart of Curator's CuratorFramework, wrapping go-zookeeper/zk v1.0.4.
//
// It adds what the bare client lacks:
//
//   - Every operation takes a context.Context and returns promptly when it ends. A request
//     abandoned this way is not recalled from the server: its late result is discarded, and a
//     node it created is deleted only where it is provably that call's own (a protected
//     name carrying the call's UUID, or a sequential node whose name came back to it). A
//     plain path's late create stays, as in ZooKeeper and Curator: a cancelled write's
//     outcome is unknown, and a later call may have found and relied on that node.
//   - Operations run under a retry policy (package retry) and wait up to the connection
//     timeout for a connection before they fail with a connection loss.
//   - Connection states as Curator defines them (Connected, Suspended, Reconnected, Lost,
//     ReadOnly), driven from go-zookeeper's event callback rather than its lossy channel, and
//     delivered to listeners one at a time, in order, on a goroutine the client owns.
//   - Lost is reported when the server says the session expired, when the session id
//     changes, and when the client has been suspended for longer than the negotiated session
//     timeout (Curator's simulated expiry): a client cut off from every server is never told
//     that its session expired, so this timer is its only early signal.
//   - Paths are validated with ZooKeeper's own rules, and data over the server's limit is
//     refused, before anything is sent.
//   - Protected creation (Curator's _c_<uuid>- names) and guaranteed deletion.
//   - A namespace (and a chroot in the connect string) applied to every path, the
//     namespace node created on first use.
//   - One watch per node and kind (data, exists, children) per session, shared by every
//     caller of GetDataW, ExistsW and ChildrenW until it fires: go-zookeeper cannot remove
//     a watch, so without this a caller polling with short contexts would leave one more
//     watcher behind on every call.
//
// # Sessions and generations
//
// go-zookeeper silently opens a new session on the same connection after an expiry.
// Recipes must know: Generation counts the sessions as recipes see them. It changes on
// every Lost and on every new session id, and LossSignal(gen) tells a recipe when what it
// holds in a generation may be gone, according to the client's ErrorPolicy.
//
// A Client is safe for concurrent use.
//
// # Shapes
//
// Every package of the module follows the same shapes for the same acts:
//
//   - A method that waits — for the server, a connection, a watch, a lock — takes a
//     context.Context first, and returns when it ends.
//   - Start() without a context only starts background work and returns at once:
//     Client.Start, persistentnode.Node.Start, persistentnode.TTLNode.Start. A Start(ctx)
//     waits for something before it returns (latch node made, members or instances read,
//     the value read; a cache's initial build under BuildInitialCache). Two take a
//     context without waiting: leader.Selector.Start keeps ctx for its values (the
//     contexts the leadership function gets carry them), and cache.CuratorCache.Start
//     returns at once (it keeps the shape of the other caches' Start).
//   - Acquiring returns a lease; a lease is given back with Release(ctx): a release waits
//     for the server (the lock node's delete, guaranteed in the background past ctx).
//     Releasing twice is an error.
//   - Long-lived objects (the client, caches, persistent nodes, group members, latches,
//     selectors, shared values, service discovery) end with Close() error, which cancels
//     their work and waits for their goroutines; it may be called many times. The waits
//     that rest on the server are bounded (10 s for a create in flight, the cleanup
//     timeout for deletes, which then go on in the background); the ones that rest on the
//     caller's code are not: a Close waits for a listener or a leadership function that
//     is running to return.
//   - Options are plain values (functional options over an unexported struct); a
//     constructor reports an invalid one as an error matching ErrInvalidArgument. No
//     option needs a type argument: a generic one infers it from its argument.
//   - A lease or leader term fences writes to an outside store with Token, and writes to
//     ZooKeeper itself with Guard: see Guard and WithGuard.
package framework
