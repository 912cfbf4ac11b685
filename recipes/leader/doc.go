// Package leader is leader election on ZooKeeper: Curator's LeaderLatch and
// LeaderSelector in Go, wire-compatible with Curator 5.x — Go and Java participants on the
// same path take part in one election.
//
// # Latch
//
// A Latch (Curator's LeaderLatch) stays in the election from Start to Close and is leader
// while its node is first in line. Each participant has one ephemeral-sequential node
// <path>/_c_<uuid>-latch-<seq> (protected creation) holding its participant id; nodes sort
// by the text after "latch-"; every other participant watches (with a data watch) only
// the node just ahead of it. Await waits for leadership, HasLeadership tells, listeners
// hear of each change, and Term describes the current period of leadership: its Done
// channel, a context, and a fencing token (the node's czxid).
//
// Before it claims leadership, a latch checks that its node belongs to the session it
// has now (the node's ephemeral owner), and it checks again, owner and czxid, each time
// it reads its node while it leads: a node another client made at its name is not its
// own, to lead on or to delete. Leadership ends (the Term's Done closes) when it
// may be lost: on Suspended or Lost under the client's standard error policy, on Lost
// only under the session policy, when the session changes, when the node goes, and on
// Close. After a reconnection the latch looks again from scratch: it keeps its node when
// the session survived, and otherwise makes a new one at the end of the line.
//
// Close ends the current term before it deletes the node, so the next participant
// becomes leader at once and never overlaps with this one. By default Close is silent
// (CloseSilent, as Curator's): the listeners are not told; WithCloseMode(CloseNotifyLeader)
// tells them.
//
// # Selector
//
// A Selector (Curator's LeaderSelector) is a mutex on the leader path whose nodes
// (<path>/_c_<uuid>-lock-<seq>) hold the participant id. When its turn comes it runs a
// function; leadership lasts while the function runs, and is given up (the node deleted)
// when it returns. The function's context is cancelled when leadership may be lost (per
// the client's error policy, as for a latch, and when someone else deletes the
// selector's node: the selector watches its own node while it leads; Curator's
// LeaderSelector does not), on Interrupt and on Close. Close waits for the node to be
// deleted, also for one made by an acquisition Close cut short (bounded). With AutoRequeue
// the selector queues again after each leadership, until Close; without it, Requeue puts
// it back in line, and a Requeue that returns nil always takes effect (made while the
// selector leads or gives leadership up, it queues again once that is done; Curator's
// requeue() does nothing then). A Curator LeaderSelector,
// or a Curator InterProcessMutex, on the same path takes part in the same queue.
//
// # Revocation
//
// Leadership can be made revocable (Curator has no such thing: CURATOR-171), the way a
// revocable mutex is: anyone may ask the leader to let go by writing __REVOKE__ into its
// node (Revoke with the leader's Participant.Node, `zkcurator lock revoke <node>`,
// Curator's Revoker.attemptRevoke). A latch made with WithLatchRevocationListener, or a
// selector made with WithSelectorRevocationListener, hears it while it leads; letting go
// (Latch.Close, Selector.Interrupt) is up to the listener.
//
// # Observing
//
// Observe tells anyone who leads, without taking part: a channel that gets the leader
// (its participant id and node) now and at each change, from one watch at a time on the
// leader's node, with no polling (etcd's Election.Observe). It works on a latch's and on
// a selector's path, with Go and Curator participants. A leader whose node this client
// may not read is reported by its node alone (Participant.Unreadable, no id), watched
// through the path's children.
//
// # What is not guaranteed
//
// ZooKeeper tells a participant that it leads; it cannot stop a process that pauses (GC,
// SIGSTOP, a slow disk) from outliving its session and waking up still believing it
// leads. Stop working when Done closes or the context is cancelled, and use the fencing
// token so that the resource you protect can reject an older leader.
//
// What is guaranteed is the order in which a latch's leader learns that its term ended:
// the term's contexts (Term.Context) are cancelled first, then Done closes, then the
// listeners are called with false. A task that checks its context before each step runs
// no step after a listener heard the news. A task paused between that check and its write
// still writes late, though; only the resource can refuse it.
//
// # Fencing
//
// The fenced pattern: the leader takes the token of its term (Term.Token, or
// SelectorToken in a selector's function) and sends it with every write; the resource
// remembers the highest token it has accepted and refuses a write that carries a lower
// one. A new leader's token is higher than every earlier leader's, so once the new
// leader has written, a late write from a paused former leader is refused by the store
// itself, whatever the former leader believes:
//
//	token, err := term.Token(ctx)
//	if err != nil {
//		return err // the term has ended
//	}
//	work, stop := term.Context(ctx)
//	defer stop()
//	for work.Err() == nil {
//		if err := store.Write(work, token, next()); err != nil {
//			return err // refused (token < the highest the store has seen): a newer leader wrote
//		}
//	}
//
// Writes to ZooKeeper itself are fenced by the server: Term.Guard (SelectorGuard in a
// selector's function) gives a guard on the latch node, and the recipes' writes made
// under framework.WithGuard (atomic, sharedcount, persistentnode.SetData, the queues'
// Put) go in one transaction with its check, refused (framework.ErrFenced) once the
// latch node is gone:
//
//	g, err := term.Guard()
//	if err != nil {
//		return err // the term has ended
//	}
//	_, err = counter.Increment(framework.WithGuard(ctx, g))
package leader
