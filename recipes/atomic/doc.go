// Package atomic is Curator's DistributedAtomicLong, DistributedAtomicInteger and
// DistributedAtomicValue: a counter (or a value) in one ZooKeeper node that many processes
// change atomically.
//
// Node layout: one persistent node at the path given, created on first write with its
// parents as containers. A Long holds 8 big-endian bytes, an Int 4 (two's complement), a
// Value raw bytes: Curator's formats, so Go and Curator processes can share a counter. A
// node with no data counts as 0, as in Curator. Arithmetic wraps around as Java's does
// (math.MaxInt64 + 1 is math.MinInt64), so Go and Curator agree on every value.
//
// Every change is optimistic first: read the node with its version, compute the new value,
// write it with a versioned setData (a create when the node does not exist); when someone
// else wrote in between, try again under the retry policy (WithRetryPolicy). With
// WithPromotedToLock, a change that the optimistic tries did not get through is tried again
// while holding a mutex at the lock path (a recipes/mutex lock, the same nodes as Curator's
// InterProcessMutex), as Curator's PromotedToLock; the lock path may not be the counter's
// path or below it (the lock's container parents would make the counter node a container,
// which the server deletes). Each call returns a Result: whether it succeeded, the value
// before and after, and how many tries it took in each mode and how long. Succeeded false
// with a nil error means the tries the policies allow all lost the race; nothing was
// written.
//
// A result never claims what it cannot prove. A write whose connection was lost or whose
// context ended while it was in flight may or may not have been applied; so may a write
// the client retried after a lost connection when the retry finds the node changed; and
// the create of a missing node (the first change of a counter) that the client sent again
// after a lost connection is so even when it succeeds: its first attempt may have made the
// node, which someone deleted (a reset) before the resend made it once more, the change
// then applied twice. Such a call returns an error matching ErrUnknownOutcome (which is framework.ErrUnknownOutcome;
// with Succeeded false, and Post the value that may have been written) and does not try again: trying again could apply an
// increment twice.
//
// A version is not an identity. A counter node deleted and made again (a reset) restarts
// at version 0, so a change that read the old node at version v is applied to the new one
// when it is at v too: ZooKeeper cannot refuse that write once it is sent, and the reset
// is lost. Every versioned write is bound to the node read: when the Stat it returns has
// another czxid, the call returns an error matching ErrNodeReplaced and ErrUnknownOutcome
// (Succeeded false, Post the value written to the new node) and does not try again.
// Curator reports such a change as a success, with a Pre and Post the server never gave.
// The caller reads the counter again and decides whether the change must be redone or the
// reset restored; whoever resets a counter that others change concurrently should check
// the value after its reset.
//
// The framework retries a write after a lost connection by itself, and marks a write it
// sent again whose answer the first attempt may explain (framework.ErrUnknownOutcome):
// that mark is what makes such a call report ErrUnknownOutcome, so no retried write is
// ever taken for a conflict.
//
// # Fenced writes
//
// A lock holder or leader that changes a counter fences the change with its lease's or
// term's guard: framework.WithGuard(ctx, guard) (mutex.Lease.Guard, leader.Term.Guard).
// Every write of a change made under that context (Add, Increment, TrySet,
// CompareAndSet, ForceSet, Initialize, and the create of a missing node and of its
// missing parents) goes in one transaction with the guard's check, so the server applies
// it only while the lease or term holds; a refused change returns an error matching
// framework.ErrFenced and wrote nothing. Not guaranteed: a guarded create of the missing
// node goes in a transaction, and the client does not say whether it sent a transaction
// again; one sent again after a lost connection that succeeds is reported as a success,
// as an unguarded one sent again is not (see above). Parents made under a guard are persistent nodes,
// not containers (a transaction cannot make a container). The reads are not guarded.
//
// The counter node is persistent and outlives sessions; a lost session costs nothing but
// the call in flight. A Long, Int or Value holds no state besides its configuration and is
// safe for concurrent use.
package atomic
