// Package doublebarrier is Curator's DistributedDoubleBarrier in Go: a barrier that
// members enter together and leave together. Enter blocks until at least memberQty
// members have entered; Leave blocks until every member that entered has left. It is
// wire-compatible with Curator 5.x: Go and Java members can enter and leave the same
// barrier.
//
// A typical use is a batch job in N parts: N workers Enter, so that none starts before
// all are there; each does its part; each calls Leave, so that none moves on before all
// are done.
//
// # Znode layout
//
// Under the barrier's path (a container node, removed by the server once empty):
//
//   - <path>/<uuid>: one ephemeral node per member, named by a random (version 4) UUID
//     that the DoubleBarrier value chose when it was made.
//   - <path>/ready: a persistent node, created by the member whose arrival brings the
//     count of members to memberQty; its creation lets everyone in. The last member to
//     go (the one whose node is the last member node) deletes its node and ready in one
//     transaction. While its node exists no member is done with the round (each waits
//     for every member node to go, as Curator's do), so nobody else deletes ready and
//     nobody can make a new one: the ready the transaction meets is the round's own. A
//     transaction that lands late (delayed in the network) or is sent again after it
//     was applied fails as a whole on the member node, whose name is never used again
//     once a delete of it may be outstanding: it cannot remove a next round's ready.
//     A member may still enter by ready between the last member's listing and its
//     transaction. A member that goes in by a ready it finds there (rather than one made
//     after its node) does so in a transaction that checks ready and writes ready's czxid
//     into its node's data (8 bytes, big-endian; Curator reads no member node's data): its
//     node's mzxid after its czxid marks the entry, and the data says by which round's
//     ready. The last member lists the barrier once more after its transaction and waits
//     for a node marked by its round's ready, and for no other: a node made in between but
//     not marked is a member still waiting in Enter, which that ready did not let in.
//
// The fallback: a member that finds no member node left but ready still there deletes
// ready (already gone is fine), as Curator's members do. That happens only when the last
// member node went without ready: its session expired, its Leave gave up and its cleanup
// deleted only the node, or it was a Curator member (which deletes its node, then ready).
// That delete, its retries and the client's background retries remove only a ready
// created before the member's last listing (by czxid: each round's ready is a new node at
// version 0). Not covered: such a delete delayed in the network after its read of ready,
// landing once the next round made its own ready (also at version 0), still removes it.

// Enter syncs its server with the leader, creates the member node, then sets an exists
// watch on ready, and is in if ready exists or the members number at least memberQty (then
// it creates ready); otherwise it waits for ready to appear. The watch is set after the
// member node is made, so the ready it hears of was made while that node was there. A
// ready there already lets the member in only if it was made after the first node this
// Enter made (its maker may have counted it: a member that replaces its old session's node
// by one of the new session, in one transaction, has had a node there all along, and the
// round's members wait for the new one; one whose node went — its session expired, or someone deleted it —
// dates anew from the node it makes then, as a ready made while it had no node did not
// count it: should the round's members wait for the new node all the same, they wait until
// this Enter ends), or a member node
// older than it, or one that went in by it late (marked, see below), is still there (a
// round under way: the member joins it late), or memberQty
// is 1 (it goes in by such a ready in one transaction with a check of ready, which marks
// its node: see the layout); otherwise it is a leftover of a round with no member left (every Leave cut short,
// or Curator members, which delete their node before ready): the member deletes it (bound
// by its czxid) and waits for memberQty members. The sync keeps a server that lags (cut
// off from its peers) from letting a member in by the last round's ready or by members
// gone since; Curator reads without it. memberQty is a threshold, not a limit: more
// members may enter.
//
// Leave syncs its server with the leader first (so that a lagging server cannot hide a
// member that entered since, and this one take itself for the last), then follows
// ZooKeeper's double-barrier recipe: the member with the lowest node name waits for the
// highest to go; every other member deletes its node and waits for the lowest to go; a
// member alone deletes its node (and ready, in the same transaction). Leave returns when
// no member node of its round is left, so nobody returns from Leave before every member
// of its round has at least started leaving. Names are reused from one round to the
// next, identities are not: a member whose node is gone returns once the round's ready is
// gone (or the one listed is a later round's, by its czxid) and no member marked as gone
// in by it is left; it does not wait for a next round's members (not even one that
// reuses a name of its round: a member that leaves counts the children made since its
// first listing, by the barrier's cversion, and looks at ready before it watches such a
// node) or for members still waiting in Enter. (A Curator member that goes in late by a ready it finds does not mark
// its node, and is not waited for once the other nodes are gone.) A member node this
// member may not read (its ACL denies it; the server
// tells watch events only to clients that may read the node) is waited for by a watch on
// the barrier's children instead.
//
// # One value, one member
//
// A DoubleBarrier value is one member: its node name is fixed when the value is made, as
// Curator's is, except that a member whose node delete failed (the client may keep
// retrying it in the background) takes a new name for its next Enter. Enter and Leave
// alternate: entering twice without leaving returns ErrAlreadyEntered, leaving without
// having entered returns ErrNotEntered. To have several members in one process, make
// several values.
//
// # Giving up, and session loss
//
// When Enter's context ends before the barrier opens, Enter deletes the member node and
// returns the context's error: the member is out. When the barrier opened after the
// member node was made and before it went (a member counted it and made ready meanwhile:
// the delete sets the node's data in the same transaction, whose zxid dates it), the
// others may have gone in counting this member: the error then matches
// ErrCountedBeforeWithdrawn too — provided that ready is still there when Enter looks,
// right after the delete: a round that counted the member and ended before that look
// leaves nothing on the server to tell. When the delete cannot complete within 2 s of the
// context's end (a stalled or lost connection; it goes on in the background), the node
// may still be counted by the others, who may go in by it: the error then matches
// framework.ErrUnknownOutcome too. A member whose own create
// of ready was applied is in, though: Enter returns nil even when its context ended (or
// the connection was lost) while that create was in flight, because its ready may have
// let the others in. Enter then waits up to 2 s for the create's answer and reads ready;
// only a create known not to have been applied makes it give up, and an outcome still
// unknown counts as in. When Leave's context ends,
// Leave deletes the member node (if it still exists) and returns the context's error:
// the others finish leaving without waiting for this member. The last member, whose
// transaction (its node and ready) was in flight, sends that transaction again instead
// (in the background when the context ended): if the first was applied, it fails on the
// member node and removes nothing. These waits for outcomes and deletes hold Enter or
// Leave at most 2 s past the context's end, all of them together: they run within the
// context while it lasts, then within those 2 s, and what that cuts short goes on in the
// background (Client.WaitGuaranteedDeletes waits for it). A Leave cut short lists the
// barrier once its node is gone, and deletes ready when no member node is left (bound by
// that listing's pzxid): when every member's Leave is cut short, the last takes ready.
//
// The member node is ephemeral. If the session expires while Enter waits, Enter creates
// the node again in the new session and keeps waiting. If it expires while the member is
// inside, the node vanishes, the other members no longer wait for it, and this member's
// Leave returns an error that matches ErrSessionLost. A member node that someone else
// deletes while the member is inside, its session alive, is gone the same way for the
// others; Leave then returns an error that matches ErrNodeDeleted instead (the session
// was not lost). Both match framework.ErrLost.
//
// # Requests
//
// A member's round costs about 11.5 requests with 8 members (measured by cmd/zkbench
// doublebarrier 4×2, 2000 ops: 11.52, of which sync 2.0, multi 0.125, delete 0.875,
// exists 1.4; each round of the benchmark is on a new path, whose parent the first
// members all try to create): Enter sends a sync, the member node's create, an exists
// watch on ready and a children listing, and the member whose arrival completes the count
// creates ready; a member that finds ready there reads its own node's Stat to date it
// (one more exists), and one that goes in by a ready older than its node marks it (one
// transaction). Leave sends a sync, lists the members, watches one node per step
// (getData, which leaves no watch behind on a node that is already gone) and deletes its
// own node; the last member deletes its node and ready in one transaction (one request),
// then lists the barrier once more (and reads the Stat of any member node it then shows).
// Only the fallback (no member node left, ready still listed) reads ready's Stat to check
// its czxid and deletes it. Curator's members all try to delete ready.
package doublebarrier
