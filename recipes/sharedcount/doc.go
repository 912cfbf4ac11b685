// Package sharedcount is Curator's SharedCount and SharedValue: a value that every
// participant of a fleet reads and agrees on, kept in one ZooKeeper node.
//
// Node layout: one persistent node at the path given (parents created as containers).
// A Count stores a 4-byte big-endian two's-complement integer, exactly as Curator's
// SharedCount does; a Value stores raw bytes, as Curator's SharedValue. Go and Curator
// processes on the same path read and write the same value. The semaphore's shared
// maximum (semaphore.NewShared) is such a count node.
//
// Start creates the node with the seed value when it does not exist, reads it, and keeps
// a watch on it: the value Get returns is refreshed each time the node changes, and read
// again after every reconnection (a change made while the client was cut off is seen once
// it is back). A node deleted by someone leaves the value held; the count then watches
// the children of the node's parent (of its nearest ancestor that is there), never the
// missing path itself, and reads the node as soon as it is made again: a closed count
// leaves no watch on a path where no node is. ZooKeeper tells a watch nothing about a change to a node its client may not
// read, and setACL fires no watch: so the count also looks at the node every 10 s (one
// exists request, which needs no permission, per 10 s per started count), and reads it
// again when its mzxid moved past the value held. A change made while the node was
// unreadable is seen within 10 s of the node becoming readable again. Get returns the
// value together with the node's version; TrySet writes only if nobody changed the node since that version was read (a versioned setData) and
// returns ErrConflict otherwise; Set writes unconditionally (ErrConflict only when the
// node was deleted: Set does not make it again). A write sent again after a connection
// loss and then answered "no node" or "bad version" may have been applied by its first
// attempt: it is reported as unknown (below), not as a conflict.
//
// A write whose connection was lost, or whose context ended, while it was in flight may or
// may not have been applied: TrySet and Set then return an error matching
// ErrUnknownOutcome (which is framework.ErrUnknownOutcome), never a success or a conflict
// they cannot prove.
//
// A version is not an identity. A node deleted and made again restarts at version 0, so a
// TrySet from a value read at version v is applied to a new node that happens to be at v:
// ZooKeeper cannot refuse that write once it is sent, and it overwrites what the new
// node's maker wrote (a reset to 0, say). TrySet binds its write to the node read (its
// czxid) and reports such a write with an error matching ErrNodeReplaced and
// ErrUnknownOutcome, never as a success; Get then returns what the node holds now. The
// caller reads again and decides; a participant whose reset must not be lost checks the
// value after its reset. Curator's SharedCount.trySetCount reports it as a success.
//
// TrySet and Set made under a context carrying a guard (framework.WithGuard: a lock's
// lease, a leader's term) go in one transaction with the guard's check: the server
// applies them only while the lease or term holds, and a refused write returns an error
// matching framework.ErrFenced and wrote nothing.
//
// Listeners hear each change of the node, by its version (a change back to the same
// value too; Curator's listeners hear every read made after a watch event or a
// reconnection, changed or not), and each connection state, one call at a time, on a
// goroutine the library owns. When the session is lost, the node (persistent) stays; the
// value is read again on the new session.
package sharedcount
