// Package queue is Curator's queues in Go: DistributedQueue (Queue), DistributedIdQueue
// (IDQueue), DistributedPriorityQueue (PriorityQueue), DistributedDelayQueue
// (DelayQueue) and SimpleDistributedQueue (SimpleQueue), generic over the item type with
// a Serializer the caller supplies: Bytes{} for []byte, String{} for string, JSON[T]{}
// for any T as JSON, or one of the caller's own. They are wire-compatible with
// Curator 5.x: Go and Java producers and consumers can share a queue path.
//
// ZooKeeper is not a high-volume queue (Curator's tech note 4 says so): every item is a
// znode, every consumer lists all of them, and the listing grows with the queue. Use these
// queues for small coordination queues: work hand-off between a few services, delayed
// retries, a short priority list of jobs. The README gives measured rates.
//
// # Znode layout
//
// Items of the four distributed queues are persistent sequential nodes under the queue
// path, named "queue-" then a kind-specific part then the 10-digit sequence number:
//
//	queue-0000000007                 Queue
//	queue-|order-42|0000000007       IDQueue (the id between "|")
//	queue-1000000050000000007        PriorityQueue (priority 5: "1" and 8 hex digits; "0" and 8 for a negative one)
//	queue-|18C0A7F9D2E|0000000007    DelayQueue (due time, Unix ms in hex, between "|")
//
// A node's data is Curator's item format, which holds one or more items (PutMulti): the
// 4-byte version 0x00010001, then per item the byte 0x01, a 4-byte big-endian length and
// the item's bytes, then the byte 0x02. Children of the queue path without the "queue-"
// prefix are ignored. SimpleQueue's nodes are "qn-<seq>" holding the item's bytes as they
// are.
//
// With a lock path (WithLockPath), a consumer first creates the ephemeral node
// <lockPath>/<item node name>; a consumer that finds it taken moves on, watching it. When
// it goes (its holder finished, or died and the server ended its session: a session
// timeout or more after the death), the consumer lists the queue again (Consume after
// the item in hand, ConsumeOne at its next call), so that the item is taken in its place
// in the queue's order, not after the rest of a backlog listed earlier; an idle consumer
// wakes for it. A lock node this client may not read (another client's ACL) fires no watch
// (ZooKeeper tells a watch only to a client that may read the node): such a lock node is
// watched through the lock path's children, and any lock node made or deleted there then
// makes the consumer look whether that one is still held. The item node and the lock node are then
// deleted together, in one transaction,
// after the handler returned; in ErrorMode Requeue a failed item is re-created at the end
// of the queue in the same transaction, under its old name prefix (its priority, id or
// due time kept; Curator 5.4 requeues under plain "queue-"). A consumer that requeued an
// item backs off before its next take (100 ms, doubling for each failure of the same item
// in a row, up to 5 s). With WithMaxAttempts(n) it gives up on an item whose handler
// failed n times in a row as this Queue value counts (each Queue value keeps its own
// count: Curator's item format carries none): with WithDeadLetterPath the item is moved, in that
// one transaction, to <deadLetterPath>/<its name prefix><seq> with the same bytes (the
// dead-letter path is a queue of the same kind); without one it is left in the queue and
// Consume returns the handler's error, matching ErrAttemptsExhausted. That transaction
// carries the item's bytes and the item's, the destination's and the lock node's paths
// (counted exactly): an item Put near the packet limit, with lock and dead-letter paths
// longer than a few hundred bytes together, does not fit it and cannot be requeued or
// moved; the consumer gives it back at once (nothing sent) with an error matching
// ErrNotRemoved and framework.ErrDataTooLarge, and it is delivered again. So is an item
// whose node, or whose lock node, is read at version -1 (a node's version is a 32-bit
// counter that wraps after 2^32-1 writes, and ZooKeeper takes -1 for any version): its
// removal cannot be bound to the node read, and the error matches ErrNotRemoved and
// framework.ErrWrappedVersion; without a lock path, a take of such an item fails with
// framework.ErrWrappedVersion and the item stays. A write of the node moves its version on.
//
// # Delivery guarantees
//
// Without a lock path (Curator's default) a consumer deletes the node, then hands its
// items to the handler: at most once, an item whose consumer dies is lost. A take whose
// delete the server applied delivers the item, also when its context ended while the
// delete was in flight (the take waits up to 10 s for the delete's answer); a take whose
// delete's outcome is unknown (its answer lost with the connection, or a resend answered
// "no node", which another consumer's take may explain) delivers nothing and returns an
// error matching ErrMaybeGone: the item may be gone. (Curator takes such a resend's
// answer for another consumer's take, and the item may be lost with no error.) The same
// holds for SimpleQueue. Names are reused: a queue path deleted and made again starts its
// sequence numbers again, and a delete bound to the version its taker read (a multi
// cannot check a czxid) removes a new item at the same name made between that read and
// the delete. Each take (and a lock path's removal of a handled item) therefore reads the
// queue path after its delete was applied: one made after the item returns an error
// matching ErrMaybeGone rather than nil (also when the queue path was made again only
// after the removal, which cannot be told apart); without a lock path the item read is
// then not delivered. Not covered: a queue path gone at that read is taken for one
// deleted after the removal (a container queue path emptied by it), so a new item is
// still lost with no error if the queue path was deleted, made again with it, the item
// removed, and the queue path deleted again, all within the take's two round trips. With a lock
// path an item is delivered at least once: a consumer that dies mid-item leaves the item
// and its lock node goes with its session, and another consumer takes it. An item is
// delivered twice only when its consumer lost its session after its handler ran and
// before the item was removed (the consumer's error matches ErrNotRemoved), when a failed
// item is requeued (ErrorMode Requeue), or when a put was sent twice after a connection
// loss (Put's error matches ErrMaybeTwice, and the node path it returns is valid). The
// move of an item given up on to the dead-letter path neither loses nor duplicates it:
// the transaction that creates it there deletes it from the queue, bound to the node
// read, and a resend after a lost answer finds it gone and applies nothing; a move whose
// outcome is unknown at the clean-up timeout, or cut by the end of the session, reports
// ErrNotRemoved as a removal does (the item is then in the queue or in the dead-letter
// path, once; the error matches framework.ErrUnknownOutcome and the HandlerError's
// OutcomeUnknown is set when the move went out and its answer was lost). The removal's
// transaction (plain, requeue or move) deletes the lock node by its path, so it is bound
// to the session that made the lock node (framework.InSession): after a connection loss
// it is sent again only in that session, never in a new one, where the lock node at that
// path may be another consumer's that holds the item (left: a transaction handed to
// go-zookeeper just as the connection drops is queued there and sent once it reconnects,
// in a new session if the old one expired meanwhile). An item found removed by someone
// else (without the lock) before the consumer's transaction went out is reported so
// (HandlerError.RemovedByOther), with nothing moved or requeued. A consumer whose lock
// node was deleted by someone else while its handler ran (another consumer may have
// locked and taken the item since) removes nothing and reports ErrNotRemoved, also when
// it finds the item gone by then (with its lock node gone, it cannot tell a removal
// without the lock from another consumer's take, whose handler ran too): its removal
// deletes the lock node at the version it read once it found the node its own
// (its session and a token in its data), never another consumer's found at that path
// (left: our lock node deleted and another consumer's made at its path within the round
// trip between that read and the removal). A consumer whose session
// ended while its handler ran leaves the item (another consumer
// may hold it by then) and reports ErrNotRemoved, saying where the item is as far as a
// read made while its context lasts tells (in the queue, taken by another consumer, or
// not known); nothing of it outlives its context. A consumer whose context ends while it
// removes a handled item still finishes the removal (bounded by the clean-up timeout)
// before it returns, so that stopping a consumer does not deliver its last item twice;
// when the item could not be removed, its error matches both ErrNotRemoved and the
// context's error. A consumer stopped part-way through a node of several items
// (PutMulti) puts the items it did not handle back as a new node at the queue's tail (a
// requeue's name), in one transaction with the node's removal: none is lost and none
// handled is delivered again; when that transaction could not be made, its error matches
// ErrNotRemoved (the whole node may come again). Not covered: a session the server
// expires while its client, served by another member, is never cut off (a stopped and
// resumed leader) is learnt of only later; a consumer that finishes in between removes
// the item together with the lock node another consumer has made meanwhile, and that
// item is delivered twice with no error (the reliability suite shows it).
//
// # Connection and session loss
//
// Puts and takes retry through connection losses with the client's retry policy. A
// consumer's lock nodes are ephemeral: when its session ends, the items it held go back
// to the other consumers. Consume keeps consuming through errors (it reports them to the
// WithErrorListener function) until its context ends or the client is closed.
package queue
