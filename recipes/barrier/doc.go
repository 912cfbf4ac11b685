// Package barrier is Curator's DistributedBarrier in Go: a gate that holds every process
// waiting on it until someone removes it. It is wire-compatible with Curator 5.x: a Go
// process and a Java process using DistributedBarrier on the same path set, remove and
// wait on the same barrier.
//
// A typical use is a batch job: a coordinator sets the barrier, workers start and Wait on
// it, and the coordinator removes it once the input is ready, which releases every worker
// at once.
//
// # Znode layout
//
// The barrier is one persistent node at the barrier's path: it is set while the node
// exists. Set creates it (and its missing parents, as container nodes, which the server
// removes once they are empty); Remove deletes it. Waiters read the node with a watch and
// return once it is gone, or once the watch tells them it was deleted, even when it has
// been set again since. A barrier node a waiter may not read is set all the same:
// ZooKeeper tells a client of no change to a node it may not read, so such a waiter
// watches the parent's children instead, or, when it may not read the parent either,
// checks with exists (which needs no permission) again every second. The node's data is not used (Curator writes the host's address
// into it; this package writes none).
//
// A waiter is released only on an up-to-date read: Wait syncs its server with the leader
// before the check that may release it (one more request per Wait), so a server that lags
// or is cut off from its peers cannot tell it "not set" for a barrier set meanwhile.
// Curator reads without a sync. IsSet syncs the same way before it reads.
//
// # Connection and session loss
//
// The barrier node is persistent, so it outlives every session. A waiter whose
// connection drops keeps waiting: its watch is re-armed when the client reconnects,
// and Wait looks at the node again after every reconnection and after a session expiry,
// so a barrier removed while the waiter was cut off is noticed as soon as it is back.
// Wait ends early only when its context ends or the client is closed.
package barrier
