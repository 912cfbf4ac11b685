// Package persistentnode is Curator's PersistentNode and PersistentTtlNode: a node that
// stays in place while the program runs, whatever happens to it.
//
// A Node creates its node in the mode asked (ephemeral by default; any of the framework's
// create modes, protected or not, with a TTL) and keeps it there: when someone deletes
// it, or the session ends and takes an ephemeral node with it, the node is created again
// at the same path with the data last asked for. WaitForInitialCreate waits for the first
// creation; ActualPath returns the node's path (with its protected prefix or sequence
// suffix); SetData changes the wanted data and the node's. Listeners hear each creation
// and re-creation. Close deletes the node, when it is provably this Node's own.
//
// # Node layout
//
// As Curator 5.4: the node at the path given, its parents created as containers (unless
// WithoutParents). With WithProtection the name is _c_<uuid>-<name>; a sequential mode
// adds the 10-digit suffix at the first creation. A re-creation reuses the exact path of
// the node made (a sequential node comes back, as a plain node, under the same name; a
// protected one with the same _c_<uuid>- prefix, where Curator 5.4 makes a protected
// sequential node again at its base name and old sequence number under a fresh
// _c_<uuid>- prefix), so a Node never owns two nodes. An unprotected sequential node
// comes back at its name only into the parent it was made in (the parent still there,
// older than the node), and without making parents: when the parent was deleted and made
// again (a container parent left empty is deleted by the server), its sequence numbers
// restarted, and a node at the old name could be ahead of the counter and block every
// later sequential create of that name there (ZooKeeper refuses it, node exists, without
// moving the counter on). Then, or when the Node does not know its node's czxid, it makes
// a new sequential node (a re-creation: Created.Recreated is true), whose name may differ;
// Curator makes it again at the old name. A protected name, with its UUID, is never one
// the counter gives: it comes back at its name in any parent.
//
// # Ownership
//
// A node is a Node's own only when it proves it: its protected name (WithProtection), or,
// without protection, the Node's owner token (framework.OwnerToken): one more entry in
// the ACL of every node the Node creates, READ for the digest identity
// zoocurator-owner:<uuid>, which no one can authenticate as. Names and data are as
// Curator's; only getACL shows the token. Neither the session (two Nodes on one client
// share it) nor the path proves it. So after a create whose reply was lost, the retry
// finds the node the lost attempt made (by its name or token; a sequential one among the
// parent's children) instead of making a second one; and a second Node at the path of
// another on the same client finds a node that is not its own: it does not report it
// created and its Close leaves it (see below). Nor does a czxid read by name: when the
// read after a create that was applied fails (the connection cut right after it), the
// node at the path is taken as this Node's, with its czxid, only once its name or token
// proves it; another's node made there meanwhile is kept as another's (a sequential one
// is left, and the Node makes a new one). Curator's PersistentNode takes any node at its
// path as its own and deletes it at close, another instance's too.
//
// A TTLNode (Curator's PersistentTtlNode) is a container node kept by a Node plus a
// child, "touch" by default, created in mode PersistentWithTTL and written every
// TTL/2 (WithTouchScheduleFactor): while the program runs the child stays, so the
// container does; once it stops, the server deletes the child after the TTL and then the
// container. The server must run with extendedTypesEnabled: a server that refuses the
// child (without it, every TTL node is refused) has WaitForInitialCreate return its
// answer. Close leaves both nodes to the server, as Curator does, once the container has
// had a child. The server never reaps a container that never had one, so Close deletes
// a container of its own (its owner token) that never had a child: one made just before
// Close, whose child was refused, or made by a create of the container given up on by
// Close (see TTLNode.Close).
//
// # What is not guaranteed
//
// While the connection is lost or the session is gone, the node may be missing; it comes
// back once the client reaches a server again (with a new session, when the old one
// expired). A node found at the path and not made by this Node (another process's, or
// another Node's on the same client) is kept and its data set, as Curator does; it is not
// reported as created (WaitForInitialCreate returns); when its data cannot be set (its
// ACL refuses, say) it is watched all the same and, once deleted, created again, this
// time as this Node's own. Close leaves such a node, since it is not this Node's own.
// A sequential node is re-created at the name it had (unprotected: in the parent it was
// made in; see Node layout), except when another's node has that name by then: that node is neither
// kept nor written (SetData's write too is bound to the czxid of the Node's node, not to
// its name), and the Node makes a new sequential node of its own (Curator keeps
// the other's node and writes its data into it). A parent deleted and made again by
// someone else between the Node's look at it and its create is not seen: the node then
// comes back at its old name in the new parent. A sequential create refused because a
// node has the name the parent's counter gives (one made there by name) is tried again
// after a pause, doubling from 100 ms to 5 s, until that name is free or the counter
// moves on.
//
// ZooKeeper tells a watch nothing about a node its client may not read (and setACL fires
// no watch): a node whose ACL someone changed to deny this client READ, and then deleted,
// fires no event. So a Node also looks at its node every 10 s with one exists request
// (which needs no permission on the node) and no watch: a deletion made while the node
// was unreadable is noticed within 10 s, and the node is created again. That costs one
// request per 10 s per started Node; Close stops it.
//
// Ownership is read from the node's ACL (getACL needs READ or ADMIN): a Node whose ACL
// provider gives its own client neither on the node cannot prove the node its own, and
// Close leaves it.
//
// Close during a create gives that create up, waits for its answer (or its connection's
// loss; at most 10 s) and then looks for the node it may have made (by its token, or,
// protected, by the _c_<uuid>- prefix of its name among the parent's children), so a late
// create cannot leave the node behind, in every mode. Close during a connection outage
// hands the delete of the node on: a protected one (by its name) to the client's
// guaranteed-delete worker; an unprotected one to a cleanup in the background that looks
// at the path once the connection is back and deletes the node there when it carries the
// Node's token, whatever its czxid, so that a node made by a create whose answer was lost
// (a re-creation after someone deleted the node, a first create given up on) goes too,
// and a node someone else made there stays. Either goes once the connection is back,
// while the client stays open (an ephemeral node goes with the session anyway); the
// client's WaitGuaranteedDeletes waits for both.
package persistentnode
