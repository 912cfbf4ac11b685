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
// A Client is safe for concurrent use.
package framework
