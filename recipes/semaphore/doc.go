// Package semaphore is Curator's InterProcessSemaphoreV2 and InterProcessSemaphoreMutex
// in Go: a distributed counting semaphore, wire-compatible with Curator 5.x on the same
// path.
//
// # Znode layout
//
//	<path>/locks   an inner mutex (nodes _c_<uuid>-lock-<seq>) that serialises acquirers
//	<path>/leases  one node per lease: _c_<uuid>-lease-<seq>, ephemeral-sequential
//
// To take a lease, a client takes the inner mutex, creates its lease node, and holds
// the lease once the leases node has no more children than the maximum; otherwise it
// waits (still holding the inner mutex, so one acquirer waits at a time) for a child to
// go. It releases the inner mutex in every case. A try (TryAcquire) that finds the inner
// mutex taken makes its lease node without it and keeps it only if the leases then
// number no more than the maximum. Releasing a lease deletes its node.
//
// The maximum is fixed (New) or read from a shared count node holding a 4-byte
// big-endian integer, as Curator's SharedCount stores it (NewShared): participants that
// change it change what new acquirers see.
//
// # Loss
//
// A lease's Done closes when it is released or may have been lost (per the client's error
// policy); a lease node is ephemeral, so a session that expires gives its leases back.
//
// The semaphore mutex (NewMutex) is the semaphore with one lease. It is not re-entrant:
// acquiring it again with a context that carries its lease fails with ErrAlreadyHeld
// instead of deadlocking.
//
// # Revocation
//
// A semaphore made with WithRevocationListener has revocable leases (Curator's
// InterProcessSemaphoreV2 has none: CURATOR-650): anyone may ask the holder of a lease to
// let go by writing __REVOKE__ into its lease node, as for a revocable mutex (Revoke,
// `zkcurator lock revoke <node>`, Curator's Revoker.attemptRevoke). The listener hears it
// with the lease; releasing is up to it. Each revocable lease keeps a data watch on its
// node while held (one request more per lease).
//
// # Requests
//
// Each lease costs, uncontended, 6 requests: the inner mutex (create, listing pipelined
// behind it, delete), the lease node (create, listing pipelined behind it) and the lease's
// delete on release. Contention adds the inner mutex's watch and re-listing, and a
// children watch on leases plus one listing per release while the semaphore is full (and
// one read of the waiter's inner-lock node per change that leaves it full: a waiter whose
// inner-lock node someone else deleted gives up its lease node and queues again, so that
// two waiters' nodes never keep a free lease from both).
// NewShared reads the count node once per look (with a watch while waiting).
package semaphore
