// Package framework is the ZooKeeper client every recipe of zoocurator is built on: the
// Go counterpart of Curator's CuratorFramework, wrapping go-zookeeper/zk v1.0.4 (or,
// when the environment has ZOOCURATOR_CONN=wire, a connection of our own that speaks
// ZooKeeper's protocol, framework/internal/wire: it is to replace go-zookeeper's Conn;
// go-zookeeper's types and error values stay the vocabulary either way).
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
//     AddCircuitBreakingListener puts a listener behind a circuit breaker (Curator's
//     CircuitBreakingConnectionStateListener): a flapping network gives it one Suspended
//     and then one Reconnected or Lost, the breaker held open as a retry policy says.
//   - Lost is reported when the server says the session expired, when the session id
//     changes, and when the client has been suspended for longer than the negotiated session
//     timeout (Curator's simulated expiry): a client cut off from every server is never told
//     that its session expired, so this timer is its only early signal.
//   - Paths are validated with ZooKeeper's own rules, and data over the server's limit is
//     refused, before anything is sent.
//   - Protected creation (Curator's _c_<uuid>- names) and guaranteed deletion.
//   - A namespace (and a chroot in the connect string) applied to every path, the
//     namespace node created on first use.
//   - Ensemble tracking (Curator's EnsembleTracker): the client reads the ensemble's
//     dynamic configuration (/zookeeper/config) at each new session and reconnection and
//     every 30 seconds (no watch: go-zookeeper v1.0.4's lastZxid race), and after a
//     reconfiguration dials the members it names, so that it still reaches the ensemble
//     once the members of its connect string are gone; the chroot and namespace are kept. The first configuration
//     read is taken to match the connect string (proxies, aliases); only a newer one
//     changes the servers. On by default without TLS; see WithEnsembleTracking.
//   - One watch per node and kind (data, exists, children) per session, shared by every
//     caller of GetDataW, ExistsW and ChildrenW until it fires: go-zookeeper cannot remove
//     a watch, so without this a caller polling with short contexts would leave one more
//     watcher behind on every call. A Watch is waited on with Done, or tells a
//     WatchHandler (Watch.Handle) when it fires, with no channel or goroutine per watch.
//
// # Sessions and generations
//
// go-zookeeper silently opens a new session on the same connection after an expiry.
// Recipes must know: Generation counts the sessions as recipes see them. It changes on
// every Lost and on every new session id, and LossSignal(gen) tells a recipe when what it
// holds in a generation may be gone, according to the client's ErrorPolicy.
//
// # Session timeout
//
// A client asks for DefaultSessionTimeout (30 s) unless WithSessionTimeout says
// otherwise, and the server grants a value within its bounds: by default [2, 20] × its
// tickTime, 4–40 s on a stock server (tickTime 2 s), which grants 30 s as asked.
// A granted value that differs from the one asked for (asking for 100 ms gets 4 s from a
// stock server; Curator's 60 s gets 40 s) is logged at Warn with both values, and
// NegotiatedSessionTimeout returns it from the moment the client reports Connected.
// The session timeout is what a crashed holder costs the others (its ephemeral nodes,
// and with them its locks, leadership and registrations, go only when the session
// expires) and what a stalled holder may survive (a GC pause or a stopped VM longer than
// it loses the session and its leases). 4–15 s is a usual choice for locks and leaders.
//
// # Errors
//
// One meaning, one errors.Is, whatever package the error came from. Each meaning the
// packages share has one sentinel here, its family root, and every package's sentinel
// of that meaning matches it with errors.Is while keeping its own message
// ("leader: closed" matches ErrClosed):
//
//   - ErrClosed: used after Close (the client, a cache, a latch, a node, ...).
//   - ErrNotStarted, ErrAlreadyStarted: Start missing, or called twice.
//   - ErrInvalidArgument: a bad argument or option, in any package (ErrInvalidPath,
//     retry.ErrInvalidArgument, queue.ErrInvalidArgument, discovery.ErrInvalidName, ...).
//   - ErrUnknownOutcome: a write that may or may not have been applied.
//   - ErrNotConnected: no connection within the connection timeout (a connection loss).
//   - ErrLost: a hold (a lease, leadership, a place in a barrier) ended or may have
//     ended without the caller letting go.
//   - ErrNotHeld: acting as the holder of something not held (a lease released already,
//     a latch that does not lead, an instance not registered).
//   - ErrLocked: a non-blocking acquisition refused because others hold it.
//   - ErrAlreadyHeld: acquiring with a context that carries a live lease of the same lock.
//   - ErrBadData: a node whose data is not in the recipe's format.
//   - ErrWrappedVersion: a write to be conditional on a version read as -1 (the 32-bit
//     counter wrapped; ZooKeeper takes -1 for any version), refused before it was sent.
//
// ZooKeeper's own conditions (ErrNoNode, ErrBadVersion, ...) are go-zookeeper's values.
// A meaning only one package has keeps a sentinel of that package alone (queue.ErrEmpty,
// discovery.ErrNoInstance). A new sentinel must name its family: a test walks every
// exported sentinel of the module and fails on one that is not in its table.
// Messages name one package, once: "leader: invalid argument: empty participant id".
// ErrInvalidArgument and ErrInvalidPath, which other packages wrap, have no prefix of
// their own for that reason.
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
