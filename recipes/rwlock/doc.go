// Package rwlock is Curator's InterProcessReadWriteLock in Go: a distributed read-write
// lock, wire-compatible with Curator 5.x on the same path.
//
// # Znode layout
//
// One parent holds both kinds of node: writers <path>/_c_<uuid>-__WRIT__<seq>, readers
// <path>/_c_<uuid>-__READ__<seq>, ephemeral-sequential and protected. Children sort by the
// text after either marker. A writer holds the lock when it is first among all children;
// otherwise it watches its immediate predecessor. A reader holds it when no writer
// precedes it; otherwise it watches the first writer ahead of it. So readers share the
// lock, writers have it alone, and a queued writer is not starved by readers that come
// after it.
//
// # Re-entrancy, downgrade and upgrade
//
// Both locks are re-entrant through the lease, as the mutex is (Lease.Reenter); Acquire
// with a context carrying a live lease of the same RWLock fails with ErrAlreadyHeld. A
// write holder downgrades through its write lease (Lease.Downgrade) and then releases
// the write lock: its reader node is a plain ephemeral node named after the writer's
// sequence number, so it sorts right next to the writer and a queued writer cannot slip
// in between. That holds when the downgrader is a Go holder: Curator 5.4's downgrade
// makes an ordinary sequential read node, and a writer queued before it (Go or Java) gets
// in once Curator releases its write lock, while Curator's read lock is still held. Taking the write lock while
// holding only the read lock (upgrade) would deadlock; it is refused with ErrUpgrade.
//
// # Loss
//
// A lease's Done closes when the lock may have been lost (per the client's error policy)
// or is released; Token is a fencing token that strictly increases from one write holder
// to the next.
//
// # Requests
//
// A read acquire and release costs 3 requests (create, listing pipelined behind it,
// delete), a write acquire the same as the mutex; a waiter adds a data watch on the node it
// waits for and one listing when it fires.
package rwlock
