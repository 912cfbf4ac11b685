// Package mutex is Curator's InterProcessMutex in Go: a distributed, re-entrant,
// revocable lock on a ZooKeeper path, wire-compatible with Curator 5.x — a Go process and a
// Java process using InterProcessMutex on the same path exclude each other and queue
// fairly.
//
// # Znode layout
//
// Each contender creates an ephemeral-sequential node <path>/_c_<uuid>-lock-<seq>
// (protected creation: a lost reply never leaves an orphan). The parent is a container
// node, removed by the server once empty. Children sort by the text after "lock-"; the
// first holds the lock; every other contender watches (with a data watch) only the node
// just ahead of it, so a release wakes one waiter.
//
// # What a lease guarantees, and what it does not
//
// Acquire returns a *Lease. The lease's Done channel is closed when the lock is released
// or may have been lost: on Suspended or Lost under the client's standard error policy,
// on Lost only under the session policy, and always when the session changes. ZooKeeper
// cannot promise more: a process that pauses (GC, SIGSTOP, a slow disk) can outlive its
// session and wake up still believing it holds the lock. Use Lease.Token, a fencing token
// that strictly increases from one holder to the next (the lock node's czxid), to make the
// resource you protect reject writes from an older holder. For writes to ZooKeeper itself
// (a counter, a shared value, a config node, a queue), Lease.Guard gives a guard
// (framework.Guard): a write made under framework.WithGuard goes in one transaction with
// a check of the lock node, so the server refuses it once the lock node is gone.
//
// # Re-entrancy
//
// Go has no thread identity, and a context reaches every goroutine it is handed to, so
// re-entrancy goes through the lease: Lease.Reenter returns another counted lease of the
// same holding, without a round trip to ZooKeeper; each is released once and the node
// goes with the last Release. Acquire and TryAcquire never re-enter: with a context that
// carries a live lease of the same Mutex (Lease.Context) they fail at once with
// ErrAlreadyHeld; a context carrying an ended lease is ignored. Any other acquisition,
// from any goroutine, contends like another process.
//
// # Revocation
//
// A holder that opts in with WithRevocationListener is called when someone writes
// __REVOKE__ into its lock node (Revoke, or Curator's Revoker.attemptRevoke): releasing
// is up to the listener. Go and Curator holders can revoke each other. A lease that has
// ended (its Done closed, under the standard error policy as soon as the connection is
// suspended) hears no request: release it when Done closes.
//
// # Requests
//
// An uncontended acquire and release sends 3 requests, the protocol's minimum: the create,
// the children listing (sent right behind the create without waiting for its reply —
// ZooKeeper answers a session's requests in order — so acquiring takes one round trip),
// and the delete. The listing also sets a children watch, which the lease keeps in place
// of a watch on its node (a node deleted by someone else while held changes the
// children); the holder reads its node (one getData with a watch) only once the children
// changed while it holds, or at once when the lock is revocable. The listing sets no watch
// at a Mutex's first acquisition or when its last listing showed another contender; the
// lease then reads its node at once (4 requests), and a release right after the
// acquisition waits for that read (one round trip). A create the server refuses (for
// the ACL or a quota) after an uncontended acquisition leaves that listing's children watch
// on the lock's parent (go-zookeeper cannot remove a watch): one watch, ended by the next
// change of the parent's children or with the session; the next acquisition sets none
// until a listing shows the lock free again. A waiter adds a getData watch on its
// predecessor and, when that fires, one more listing; none when the predecessor was first in line (it can only have been
// the holder). Token reads the node's czxid once (one request). With the local queue, a
// hand-over inside the process costs nothing, or one request (a listing) to check that no
// other process waits and that the node is still ours: a node someone else deleted (with
// its parent, which another process may have made again and locked) is never handed on.
// Within a local batch (WithLocalBatch) the hand-overs before the last are not checked.
package mutex
