package doublebarrier

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/grace"
	"github.com/zoocurator/zoocurator/retry"
)

// readyNode is the name of the node whose existence opens the barrier, as Curator's.
const readyNode = "ready"

// cleanupTimeout bounds the deletes done after a failure, on a context detached from the
// caller's (which may be what failed).
const cleanupTimeout = 10 * time.Second

// outcomeTimeout bounds how long an Enter whose create of ready may be in flight waits to
// learn whether it was applied (see readyNotApplied).
const outcomeTimeout = 2 * time.Second

// state is where a member stands.
type state int

const (
	outside state = iota
	entering
	inside
	leaving
)

// DoubleBarrier is one member of a double barrier on a ZooKeeper path. It is safe for
// concurrent use, but it is one member: Enter and Leave must alternate (see the package
// documentation); concurrent calls that break the alternation get ErrAlreadyEntered or
// ErrNotEntered.
type DoubleBarrier struct {
	client    *framework.Client
	path      string
	readyPath string
	memberQty int

	ourName string // written under mu, by Enter or Leave only
	ourPath string
	// created counts Enter's member creates until answered, also once given up on: the
	// delete after a failed Enter waits for them, so that it cannot reach the server
	// before a late create (which would then leave a member nobody deletes).
	created framework.InFlight
	// made: this Enter sent a create of our node. first: a zxid at or after the creation
	// of the first node this Enter made, and before any ready this Enter did not see (0:
	// not known yet): a ready with a greater czxid was made while a node of ours was
	// there, and its maker may have counted it. Set and read by Enter only.
	made  bool
	first int64
	// hadNode: a node of ours was there in this Enter. One made again after it went (its
	// session expired, or someone deleted it) restarts the dating (first): a ready made
	// while we had no node was not made counting us.
	hadNode bool
	// withdrawn: what the delete of our node after a failed Enter learnt (zeros: not
	// known). Set and read by Enter only.
	withdrawn withdrawal
	// sent: the sessions this Enter's creates of our node went out on (under mu: the
	// framework calls the send hook on its request goroutine). A node at our name owned by
	// one of them is ours; one owned by another session is not, whatever its name.
	sent []int64

	mu    sync.Mutex // guards the fields below; ourName and ourPath change only in Enter or Leave
	state state
	gen   uint64 // client generation in which Enter succeeded
	// retire: a delete of our node failed during this Leave (it may be queued in the
	// client's background worker), so the member takes a new name afterwards.
	retire bool
	// cleanupReady: leaveLast's transaction (our node and ready) failed with its outcome
	// unknown: Leave's cleanup sends it again instead of deleting our node alone.
	cleanupReady bool
}

// New returns a member of the double barrier on path that opens once memberQty members
// have entered. It checks its arguments (a nil client; an invalid, root or reserved
// path; memberQty < 1) but does not talk to ZooKeeper. Each value is a new member with
// its own node name.
func New(c *framework.Client, path string, memberQty int) (*DoubleBarrier, error) {
	if c == nil {
		return nil, fmt.Errorf("doublebarrier: %w: nil client", framework.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("doublebarrier: %w", err)
	}
	if path == "/" || framework.IsReservedPath(path) {
		return nil, fmt.Errorf("doublebarrier: %w: %q cannot be a barrier path", framework.ErrInvalidArgument, path)
	}
	if memberQty < 1 {
		return nil, fmt.Errorf("doublebarrier: %w: member quantity %d, want at least 1", framework.ErrInvalidArgument, memberQty)
	}
	name := newUUID()
	return &DoubleBarrier{
		client:    c,
		path:      path,
		readyPath: framework.JoinPath(path, readyNode),
		ourName:   name,
		ourPath:   framework.JoinPath(path, name),
		memberQty: memberQty,
	}, nil
}

// Path returns the barrier's path.
func (d *DoubleBarrier) Path() string { return d.path }

// Node returns the path of this member's node, <path>/<uuid>. It exists only while the
// member is entering or inside. The name stays the same from one Enter to the next,
// unless a delete of the node failed (the client may then keep deleting it in the
// background, and the member takes a new name, so that this cannot delete the node of
// its next Enter).
func (d *DoubleBarrier) Node() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ourPath
}

// MemberQty returns the number of members that opens the barrier.
func (d *DoubleBarrier) MemberQty() int { return d.memberQty }

// transition moves the member from one state to another, or fails with sentinel.
func (d *DoubleBarrier) transition(from, to state, sentinel error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != from {
		return fmt.Errorf("%w: member %s of %s", sentinel, d.ourName, d.path)
	}
	d.state = to
	return nil
}

func (d *DoubleBarrier) setState(s state, gen uint64) {
	d.mu.Lock()
	d.state, d.gen = s, gen
	d.mu.Unlock()
}

// Enter blocks until at least memberQty members (this one included) have entered, ctx
// ends or the client is closed. A deadline on ctx is Curator's enter(time, unit). On
// failure Enter deletes this member's node, so the others do not count it (within ctx,
// or for at most 2 s once ctx has ended; what that cuts short goes on in the
// background), and returns the error: one that matches ctx.Err() when ctx ended,
// framework.ErrClosed when the client was closed. When the delete of the node did not
// complete (a connection stalled or lost, or the client closed: its close may not have
// reached the server), the node may still be there and counted by
// the others, who may go in by it: the error then matches framework.ErrUnknownOutcome
// too, and the member is not known to be out.
// Before it looks at ready and the members it syncs its server with the leader, so that
// a server that lags cannot let it in by the last round's ready. A ready left by a round
// with no member left lets nobody in (see the package documentation). A member whose own
// create of ready was applied (or may have been:
// its outcome is still unknown after a bounded wait) is in: Enter returns nil, even when
// ctx ended while that create was in flight, since its ready may have let the others
// in. Entering a member that is inside already returns ErrAlreadyEntered. A member node
// of ours left by an older session is replaced bound to the version read; read as -1
// (wrapped, after 2^32-1 writes of it by someone), Enter fails with an error matching
// framework.ErrWrappedVersion and leaves that node as it is.
func (d *DoubleBarrier) Enter(ctx context.Context) error {
	if err := d.transition(outside, entering, ErrAlreadyEntered); err != nil {
		return err
	}
	d.made, d.first, d.hadNode = false, 0, false
	d.mu.Lock()
	d.sent = nil
	d.mu.Unlock()
	gctx, stop := grace.After(ctx, outcomeTimeout)
	defer stop()
	gen, err := d.enter(ctx, gctx)
	if err == nil {
		d.setState(inside, gen)
		return nil
	}
	if !d.made {
		d.setState(outside, 0)
		return fmt.Errorf("doublebarrier: enter %s: %w", d.path, err)
	}
	d.withdrawn = withdrawal{}
	withdrawn := d.deleteOurs(ctx, gctx, false, false) == nil
	d.setState(outside, 0)
	if !withdrawn {
		// Our node may still be there: the others may count it and go in. The
		// member is not known to be out.
		return fmt.Errorf("doublebarrier: enter %s: %w; the member node may still be there, counted by the others (%w)",
			d.path, err, framework.ErrUnknownOutcome)
	}
	if d.first == 0 {
		d.first = d.withdrawn.czxid // our only node: it went before any look at ready
	}
	if d.openedWithUs(gctx, d.withdrawn.end) {
		// The barrier opened after our node was made and before it went (or after our
		// node was made, when the delete's zxid is not known): the others may have gone
		// in counting it.
		return fmt.Errorf("doublebarrier: enter %s: %w; the barrier may have opened counting this member before its node went (%w)",
			d.path, err, ErrCountedBeforeWithdrawn)
	}
	return fmt.Errorf("doublebarrier: enter %s: %w", d.path, err)
}

// openedWithUs reports whether ready is there, made after the first node this Enter
// made (and before zxid, when zxid is not 0): the barrier opened while a node of ours
// was there. A ready this cannot read (the connection down, grace ended) reports false.
func (d *DoubleBarrier) openedWithUs(grace context.Context, zxid int64) bool {
	if d.first == 0 || grace.Err() != nil {
		return false
	}
	st, err := d.client.Exists(grace, d.readyPath)
	return err == nil && st != nil && st.Czxid > d.first && (zxid == 0 || st.Czxid < zxid)
}

// enter runs Enter's loop and returns the generation in which the member got in.
func (d *DoubleBarrier) enter(ctx, grace context.Context) (uint64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		gen := d.client.Generation()
		// Sync first: a server that lags (cut off from its peers) still shows the last
		// round's ready, or members gone since, and the decision below rests on what it
		// says. The reads after it on this connection see everything committed before.
		if err := d.client.Sync(ctx, d.path); err != nil {
			return 0, err
		}
		// Our node first, then the look at ready: the watch set after our node was made
		// hears only of a ready made while our node is there.
		if err := d.ensureOurs(ctx, grace); err != nil {
			return 0, err
		}
		ready, readyW, err := d.client.ExistsW(ctx, d.readyPath)
		if err != nil {
			return 0, err
		}
		if ready != nil {
			in, err := d.readyIsLive(ctx, ready)
			if err != nil {
				return 0, err
			}
			if in {
				return gen, nil
			}
			// A leftover, deleted (its delete fires readyW) or not deletable: wait for it
			// to go, then look again.
		} else {
			l, err := d.list(ctx)
			if err != nil {
				return 0, err
			}
			if d.first == 0 {
				// After our node, and no ready made before it went unseen: one made
				// between our node and this listing fires readyW before the listing's
				// answer comes.
				d.first = l.pzxid
			}
			if len(l.members) >= d.memberQty {
				var sent framework.InFlight
				_, err := d.client.Create(ctx, d.readyPath, nil, framework.WithContainerParents(), framework.WithInFlight(&sent))
				if err == nil || errors.Is(err, framework.ErrNodeExists) {
					return gen, nil
				}
				if (ctx.Err() != nil || retry.IsRetryable(err, false)) && !d.readyNotApplied(grace, &sent) {
					// Our ready may have let the others in: we are in too (a write that
					// opens something for others is ours once applied).
					return gen, nil
				}
				return 0, err
			}
		}
		select {
		case <-readyW.Done():
			if readyW.Event().Type == zk.EventNodeCreated {
				// The barrier opened while our node was there (the watch was set after
				// it was made): we are in, even if a quick leaver deletes ready before
				// we could look at it again.
				return gen, nil
			}
			// The session ended (EventNotWatching) or something else happened: look
			// again. After a session expiry ensureOurs creates our node again.
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-d.client.Done():
			return 0, framework.ErrClosed
		}
	}
}

// readyIsLive decides about a ready (with Stat st) that is there while our node is: it
// opens the barrier if it was made after the first node this Enter made (its maker may
// have counted that node, and the round's members wait for ours), if a member node made
// before it is still there or one marked as gone in by it (a round under way that we
// join late, memberQty being a threshold), or if memberQty is 1. Otherwise every member of its round is gone (their
// Leaves were all cut short, or it was left by Curator members, which delete their node
// before ready, or by hand): it is a leftover and lets nobody in. It is deleted, bound
// by its czxid (a later round's ready is another node, with a greater one). The reads
// are sent only when Enter finds ready there: a late member, or a leftover.
func (d *DoubleBarrier) readyIsLive(ctx context.Context, st *framework.Stat) (bool, error) {
	live, mark, err := d.roundOf(ctx, st)
	if err != nil {
		return false, err
	}
	if live && !mark {
		return true, nil
	}
	if live {
		return d.markIn(ctx, st)
	}
	d.client.Logger().Info("ready is left from a round with no member left: it lets nobody in; deleting it",
		"component", "doublebarrier", "path", d.readyPath, "czxid", st.Czxid)
	err = d.client.Delete(ctx, d.readyPath, framework.WithMaxCzxid(st.Czxid), framework.Quietly())
	if err != nil && !errors.Is(err, framework.ErrNoNode) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		d.client.Logger().Warn("deleting a leftover ready failed", "component", "doublebarrier", "path", d.readyPath, "err", err)
	}
	return false, nil
}

// roundOf reports whether the ready with Stat st is one we go in by (see readyIsLive),
// and whether we must mark our node to go in (see markIn): not when ready was made after
// the node we have, which every member of its round then lists.
func (d *DoubleBarrier) roundOf(ctx context.Context, st *framework.Stat) (live, mark bool, _ error) {
	if d.memberQty <= 1 {
		return true, true, nil // any ready is ours to pass
	}
	if d.first == 0 {
		ours, err := d.client.Exists(ctx, d.ourPath)
		if err != nil || ours == nil {
			return false, false, err // our node gone: the session ended, which readyW tells
		}
		d.first = ours.Czxid
		if st.Czxid > ours.Czxid {
			return true, false, nil
		}
	}
	if st.Czxid > d.first {
		return true, true, nil
	}
	l, err := d.list(ctx)
	if err != nil {
		return false, false, err
	}
	for _, m := range l.members {
		if m == d.ourName {
			continue
		}
		data, ms, err := d.client.GetData(ctx, framework.JoinPath(d.path, m))
		if errors.Is(err, framework.ErrNoNode) {
			continue
		}
		unreadable := errors.Is(err, framework.ErrNoAuth)
		if unreadable {
			ms, err = d.client.Exists(ctx, framework.JoinPath(d.path, m)) // its Stat, then
		}
		if err != nil {
			return false, false, err
		}
		// Made before ready, or marked as gone in by it (see markIn): a member of its round.
		// (Not readable: marked after ready was made.)
		marked := markedBy(data, ms) == st.Czxid || (unreadable && ms != nil && ms.Mzxid > ms.Czxid && ms.Mzxid > st.Czxid)
		if ms != nil && (ms.Czxid < st.Czxid || marked) {
			return true, true, nil
		}
	}
	return false, false, nil
}

// markIn goes in by a ready (with Stat st) that was there before our look: in one
// transaction that checks ready is still there and writes its czxid into our node's data
// (8 bytes, big-endian; Curator reads no member node's data), whose new Stat marks the
// entry (mzxid after czxid: no one else writes a member node). The members of that ready's
// round that leave after it (the last one among them, whose listing may not have shown our
// node) wait for a node so marked with their round's ready, and for no other node made
// since (a member still waiting in Enter, or a next round's). A ready gone meanwhile (the
// round ended) lets us in no more: we wait for the next round.
func (d *DoubleBarrier) markIn(ctx context.Context, st *framework.Stat) (bool, error) {
	_, err := d.client.Transaction(ctx, framework.CheckOp(d.readyPath, -1),
		framework.SetDataOp(d.ourPath, binary.BigEndian.AppendUint64(nil, uint64(st.Czxid)), -1))
	var te *framework.TxnError
	if errors.As(err, &te) && errors.Is(te.Err, framework.ErrNoNode) && !errors.Is(err, framework.ErrUnknownOutcome) {
		return false, nil // ready gone (readyW fires), or our node (the session ended)
	}
	return err == nil, err
}

// markedBy returns the czxid of the ready a member node (with data and Stat st) is marked
// as gone in by (see markIn), or 0 when it is not marked.
func markedBy(data []byte, st *framework.Stat) int64 {
	if st == nil || st.Mzxid <= st.Czxid || len(data) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(data))
}

// readyNotApplied reports whether a create of ready that failed while it may have been
// in flight (the caller's context ended, or the connection was lost) is known not to
// have been applied: its requests were answered (sent), and ready is not there after
// them. Ready cannot have been made and deleted since: nobody deletes it while our
// member node exists. When the outcome stays unknown within outcomeTimeout it returns
// false: the member takes itself for in, because its ready may have let others in.
func (d *DoubleBarrier) readyNotApplied(grace context.Context, sent *framework.InFlight) bool {
	cctx, cancel := context.WithTimeout(grace, outcomeTimeout)
	defer cancel()
	err := sent.Wait(cctx)
	var st *framework.Stat
	if err == nil {
		st, err = d.client.Exists(cctx, d.readyPath)
	}
	if err != nil {
		d.client.Logger().Warn("the outcome of our create of ready is unknown: the member takes itself for in",
			"component", "doublebarrier", "path", d.readyPath, "err", err)
		return false
	}
	return st == nil
}

// ensureOurs makes sure our member node exists and belongs to the client's current
// session. It creates first (one request in the common case) and looks at an existing
// node only when the create says there is one: a node of an older session of ours (one a
// create went out on) is replaced; another session's node at our name is not touched,
// and the member takes a new name.
func (d *DoubleBarrier) ensureOurs(ctx, grace context.Context) error {
	for attempt := 0; attempt < 3; attempt++ {
		d.made = true
		_, err := d.client.Create(ctx, d.ourPath, nil, framework.WithMode(framework.Ephemeral), framework.WithContainerParents(),
			framework.WithInFlight(&d.created), framework.WithOnSend(d.noteSent))
		if err == nil {
			if d.hadNode {
				d.first = 0 // our node went, and this is a new one: dated anew
			}
			d.hadNode = true
			return nil
		}
		if !errors.Is(err, framework.ErrNodeExists) {
			return err
		}
		// Ours from this session (a retried create whose first reply was lost), or left by
		// an older session of ours that the server is removing: then replace it.
		st, err := d.client.Exists(ctx, d.ourPath)
		if err != nil {
			return err
		}
		if st == nil {
			continue
		}
		if st.EphemeralOwner == d.client.SessionID() {
			d.hadNode = true
			return nil
		}
		d.mu.Lock()
		mine := st.EphemeralOwner != 0 && slices.Contains(d.sent, st.EphemeralOwner)
		if !mine {
			// Another client's node at our name (made there while ours was gone): not ours
			// to replace. The member takes a new name.
			d.client.Logger().Warn("a node of another session is at the member's name: the member takes a new one",
				"component", "doublebarrier", "path", d.ourPath, "owner", st.EphemeralOwner)
			d.retireNameLocked()
			d.sent = nil
		}
		d.mu.Unlock()
		if !mine {
			continue
		}
		replaced, err := d.replaceOurs(grace, st)
		if err != nil || replaced {
			return err
		}
	}
	return fmt.Errorf("member node %s keeps belonging to another session", d.ourPath)
}

// noteSent records the session a create of our node goes out on.
func (d *DoubleBarrier) noteSent() {
	sid := d.client.SessionID()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.sent, sid) {
		d.sent = append(d.sent, sid)
	}
}

// replaceOurs replaces our node, left by an older session of ours (read with Stat st), by
// one of the current session, in one transaction: no member lists the barrier without it
// meanwhile (one that did might take the round for over, and delete its ready). It
// reports false when the node changed or went since it was read (look again). A version
// read as -1 (wrapped: the member node was written 2^32-1 times, which no member does)
// cannot bind the delete: it returns an error matching framework.ErrWrappedVersion,
// nothing sent. It waits for the answer within grace (up to outcomeTimeout past the
// call's ctx): a replacement applied after Enter gave up would leave a node that its
// cleanup missed.
func (d *DoubleBarrier) replaceOurs(grace context.Context, st *framework.Stat) (bool, error) {
	version, err := framework.ReadVersion(st)
	if err != nil {
		return false, fmt.Errorf("doublebarrier: replace member node %s: %w", d.ourPath, err)
	}
	tctx, cancel := context.WithTimeout(grace, cleanupTimeout)
	defer cancel()
	_, err = d.client.Transaction(tctx, framework.DeleteOp(d.ourPath, version),
		framework.CreateOp(d.ourPath, nil, framework.Ephemeral, nil))
	var te *framework.TxnError
	if errors.As(err, &te) && te.Index == 0 {
		return false, nil // changed or gone since: look again
	}
	return err == nil, err
}

// listing is what one listing of the barrier's children found.
type listing struct {
	members  []string // member node names, sorted, without ready
	ready    bool     // ready was listed
	pzxid    int64    // the barrier node's pzxid: the last change of its children so far
	cversion int32    // the barrier node's cversion: its children's creates and deletes
	czxid    int64    // the barrier node's czxid: which barrier node (it may be made again)
	children int      // how many children it has, ready included
}

// createdSince returns how many children were created between listing from and l: each
// create and each delete of a child counts once in the cversion, and their difference is
// the change of the count. A barrier node made again in between (another czxid) counts
// as a create.
func (l listing) createdSince(from listing) int {
	if l.czxid != from.czxid {
		return 1
	}
	return (int(l.cversion-from.cversion) + l.children - from.children) / 2
}

// list lists the barrier's children.
func (d *DoubleBarrier) list(ctx context.Context) (listing, error) {
	kids, st, err := d.client.Children(ctx, d.path)
	if errors.Is(err, framework.ErrNoNode) {
		return listing{}, nil
	}
	if err != nil {
		return listing{}, err
	}
	l := listing{ready: slices.Contains(kids, readyNode), children: len(kids)}
	if st != nil {
		l.pzxid, l.cversion, l.czxid = st.Pzxid, st.Cversion, st.Czxid
	}
	l.members = slices.DeleteFunc(kids, func(k string) bool { return k == readyNode })
	slices.Sort(l.members) // the order Curator's Collections.sort gives these ASCII names
	return l, nil
}

// Leave blocks until every member has left the barrier, ctx ends or the client is
// closed. A deadline on ctx is Curator's leave(time, unit). The member's node goes as
// the recipe prescribes; the last member deletes ready with its node, in one
// transaction (see the package documentation). Leave first syncs its server with the
// leader, so that a server that lags cannot hide a member that entered since. A member
// whose node is gone returns once its round's ready is gone or is a later round's: it
// does not wait for the next round's members, which reuse the names.
//
// When ctx ends or the client is closed, Leave deletes this member's node if it still
// exists, so that the others are not kept waiting for it, and returns the error (one
// that matches ctx.Err() or framework.ErrClosed). When the member's session expired
// while it was inside, Leave returns an error that matches ErrSessionLost; when someone
// else deleted the member's node while its session lived, one that matches
// ErrNodeDeleted (both match framework.ErrLost: the others stopped counting it). Either way,
// and on success, the member is outside afterwards and may Enter again. Leaving a member
// that is not inside returns ErrNotEntered.
func (d *DoubleBarrier) Leave(ctx context.Context) error {
	if err := d.transition(inside, leaving, ErrNotEntered); err != nil {
		return err
	}
	d.mu.Lock()
	gen := d.gen
	d.mu.Unlock()
	gctx, stop := grace.After(ctx, outcomeTimeout)
	defer stop()
	err := d.leave(ctx, gen)
	d.mu.Lock()
	withReady := d.cleanupReady
	d.cleanupReady = false
	d.mu.Unlock()
	if err != nil && !errors.Is(err, ErrSessionLost) && !errors.Is(err, ErrNodeDeleted) { // our node is gone already
		_ = d.deleteOurs(ctx, gctx, withReady, true) // the error says that Leave failed already
	}
	d.mu.Lock()
	if d.retire {
		d.retireNameLocked()
	}
	d.mu.Unlock()
	d.setState(outside, 0)
	if err != nil {
		return fmt.Errorf("doublebarrier: leave %s: %w", d.path, err)
	}
	return nil
}

func (d *DoubleBarrier) leave(ctx context.Context, enterGen uint64) error {
	// Sync first: a server that lags (cut off from its peers) may not list a member that
	// entered since this one did, and this member would take itself for the last. Later
	// listings follow, on this session, what this one saw.
	if err := d.client.Sync(ctx, d.path); err != nil {
		return err
	}
	s := &leaveState{enterGen: enterGen, oursExists: true}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l, err := d.list(ctx)
		if err != nil {
			return err
		}
		next, watch, vetted, err := d.leaveStep(ctx, s, l)
		switch {
		case err != nil || next == leaveDone:
			return err
		case next == leaveAgain:
			continue
		case next == leaveNoMember:
			return d.dropReadyLeft(ctx, l)
		}
		w, czxid, err := d.watchMember(ctx, watch)
		if err != nil {
			return err
		}
		if w == nil || (s.end > 0 && czxid >= s.end) { // gone already, or made again since
			continue
		}
		if !vetted && !s.oursExists && s.end == 0 && s.round > 0 && (czxid == 0 || czxid > s.round) {
			// Made after our first listing: a member that entered late, or a next
			// round's, once the ready listed is a later round's.
			if over, err := d.readyLater(ctx, s.round); err != nil || over {
				return err
			}
		}
		select {
		case <-w.Done(): // gone (or the session ended: EventNotWatching): look again
		case <-ctx.Done():
			return ctx.Err()
		case <-d.client.Done():
			return framework.ErrClosed
		}
	}
}

// leaveState is what a Leave knows as it goes.
type leaveState struct {
	enterGen   uint64
	oursExists bool  // until we delete it
	end        int64 // the zxid of leaveLast's transaction, once applied
	// round bounds the czxid of the ready of the member's round (the round's identity):
	// the pzxid of the first listing, which shows our node. That ready was made before
	// Enter returned, so at most round; a later round's ready can only be made after our
	// node is gone, so after that listing, with a greater czxid.
	round int64
	first listing // the first listing
}

// leaveNext is what a Leave does after a listing.
type leaveNext int

const (
	leaveWatch    leaveNext = iota // wait for the member node returned to go
	leaveAgain                     // list again
	leaveDone                      // return
	leaveNoMember                  // no member node is left: see dropReadyLeft
)

// leaveStep decides what Leave does after listing l: the recipe's step (the lowest
// waits for the highest, the others delete their node and wait for the lowest, the last
// deletes its node and ready), with which member nodes are of our round. vetted: the
// node to watch is known to be of our round.
func (d *DoubleBarrier) leaveStep(ctx context.Context, s *leaveState, l listing) (next leaveNext, watch string, vetted bool, err error) {
	members := l.members
	i := slices.Index(members, d.ourName)
	if i < 0 && s.oursExists { // our session expired, or someone deleted it
		return leaveDone, "", false, d.ourNodeGone(s.enterGen)
	}
	if s.round == 0 && i >= 0 {
		s.round, s.first = l.pzxid, l
	}
	switch {
	case len(members) == 0 && s.end > 0:
		return leaveDone, "", false, nil // ready went with our node
	case len(members) == 0:
		return leaveNoMember, "", false, nil
	case s.end > 0:
		// Our transaction deleted ready. A member that went in by that ready after our
		// listing marked its node with it: wait for it. The others are waiting in Enter,
		// or a next round's.
		return d.waitLate(ctx, members, s.round)
	case i >= 0 && len(members) == 1: // only ours left: ours and ready go together
		end, err := d.leaveLast(ctx, s.enterGen)
		if err != nil || end == 0 {
			return leaveDone, "", false, err
		}
		s.end, s.oursExists = end, false
		return leaveAgain, "", false, nil // a member may have entered by our ready since our listing
	case i == 0: // lowest: wait for the highest to go
		return leaveWatch, members[len(members)-1], false, nil
	case i < 0 && !l.ready:
		// Our node is gone, and so is the round's ready (its last member deletes it with
		// its node, before this listing): the round is over but for a member that went in
		// by that ready after the last member's listing (it marked its node before the
		// delete): wait for it. The others are waiting in Enter, or a next round's, which
		// reuses the names.
		return d.waitLate(ctx, members, s.round)
	}
	// The others: go, and wait for the lowest to go.
	watch = members[0]
	if s.oursExists {
		if err := d.deleteOursNow(ctx); err != nil {
			return leaveDone, "", false, err
		}
		s.oursExists = false
		return leaveWatch, watch, false, nil
	}
	if l.createdSince(s.first) == 0 {
		return leaveWatch, watch, false, nil // the nodes of our first listing, and its ready
	}
	// A node made since our first listing: one of our round that went in late, or a next
	// round's (whose names may be ours), once the ready listed is a later round's. Look
	// before watching: a watch on a next round's node would stay behind.
	watch, err = d.ofOurRound(ctx, members, watch, s.round)
	if err != nil || watch == "" {
		return leaveDone, "", false, err
	}
	return leaveWatch, watch, true, nil
}

// waitLate is leaveStep's wait for a member marked as gone in late (enteredLate) before
// zxid; with none, Leave is done.
func (d *DoubleBarrier) waitLate(ctx context.Context, members []string, zxid int64) (leaveNext, string, bool, error) {
	watch, err := d.enteredLate(ctx, members, zxid)
	if err != nil || watch == "" {
		return leaveDone, "", false, err
	}
	return leaveWatch, watch, true, nil
}

// dropReadyLeft ends a Leave whose listing l shows no member node left.
func (d *DoubleBarrier) dropReadyLeft(ctx context.Context, l listing) error {
	if !l.ready {
		return nil // gone already: a ready made since is a next round's
	}
	// Fallback: no member node is left, but ready is. The last member's node went
	// without it: its session expired, its Leave gave up and its cleanup deleted only its
	// node, or it was a Curator member (which deletes its node, then ready). Delete it,
	// as Curator does; a failure does not change that every member is out. Every attempt
	// (the first, the framework's retries after a connection loss, and the client's
	// background worker when the outcome is unknown) is bounded by the listing's pzxid:
	// each round's ready is a new node at version 0, and a next round's can only be made
	// after this one is gone, after the last listing, so with a later czxid. The bound
	// costs a read of ready's Stat; what it does not cover is a delete request delayed in
	// the network after that read, landing once the next round made its own ready.
	opts := []framework.DeleteOption{framework.Quietly()}
	if l.pzxid > 0 { // (0: unknown, never seen from a real server; WithMaxCzxid(0) would be no bound)
		opts = append(opts, framework.WithMaxCzxid(l.pzxid), framework.Guaranteed())
	}
	err := d.client.Delete(ctx, d.readyPath, opts...)
	if err != nil {
		d.client.Logger().Warn("deleting the ready node failed", "component", "doublebarrier", "path", d.readyPath, "err", err)
	}
	return nil
}

// watchMember sets a watch on the member node name and returns it with the node's
// czxid (0 when unknown), or a nil watch when the node is gone already. It is a data
// watch, not an exists watch: when the node is gone, no watch is left behind. A node this
// client may not read (its ACL denies it) cannot be watched: the server tells a watch's
// events only to a client that may read the node (an exists watch on it is set, but never
// fires). Leave then watches the barrier's children instead, which it may read: the
// node's delete fires that watch (as does any other change of the members, after which
// Leave looks again).
func (d *DoubleBarrier) watchMember(ctx context.Context, name string) (*framework.Watch, int64, error) {
	_, st, w, err := d.client.GetDataW(ctx, framework.JoinPath(d.path, name))
	if errors.Is(err, framework.ErrNoAuth) {
		var kids []string
		st = nil
		kids, _, w, err = d.client.ChildrenW(ctx, d.path)
		if err == nil && !slices.Contains(kids, name) {
			return nil, 0, nil // gone since: the child watch fires at the next change
		}
	}
	if errors.Is(err, framework.ErrNoNode) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if st == nil {
		return w, 0, nil
	}
	return w, st.Czxid, nil
}

// ofOurRound returns, for a member whose node is gone, the node to wait for among members
// when a child was made since its first listing (at pzxid round): the lowest (name) while
// ready is the round's (made at or before round), else a member marked as gone in by the
// round's ready (see enteredLate), or "" when none is left: the round is over.
func (d *DoubleBarrier) ofOurRound(ctx context.Context, members []string, name string, round int64) (string, error) {
	st, err := d.client.Exists(ctx, d.readyPath)
	if err != nil {
		return "", err
	}
	if st != nil && st.Czxid <= round {
		return name, nil
	}
	return d.enteredLate(ctx, members, round) // ready gone since the listing, or a later round's
}

// readyLater reports whether ready is gone or was made after zxid.
func (d *DoubleBarrier) readyLater(ctx context.Context, zxid int64) (bool, error) {
	st, err := d.client.Exists(ctx, d.readyPath)
	if err != nil {
		return false, err
	}
	return st == nil || st.Czxid > zxid, nil
}

// enteredLate returns the first of members whose node is marked as gone in late (see
// markIn) by the ready of our round, whose czxid is at most round (a later round's ready
// is made after our first listing, at pzxid round), or "" if none is.
func (d *DoubleBarrier) enteredLate(ctx context.Context, members []string, round int64) (string, error) {
	for _, m := range members {
		if m == d.ourName {
			continue
		}
		path := framework.JoinPath(d.path, m)
		data, st, err := d.client.GetData(ctx, path)
		if errors.Is(err, framework.ErrNoAuth) {
			// Its data is not ours to read, its Stat is: marked by some ready, which we
			// take for our round's (waiting rather than leaving a member of ours in).
			if st, err = d.client.Exists(ctx, path); err == nil && st != nil && st.Mzxid > st.Czxid {
				return m, nil
			}
			continue
		}
		if errors.Is(err, framework.ErrNoNode) {
			continue
		}
		if err != nil {
			return "", err
		}
		if r := markedBy(data, st); r > 0 && r <= round {
			return m, nil
		}
	}
	return "", nil
}

// leaveLast ends Leave for the member whose node is the last member node: it deletes
// its node and ready in one transaction. While our node exists the round has not ended
// for any member (each waits for every member node to go, Curator's too), so nobody
// else deletes ready and nobody can make a new one: the ready the transaction meets is
// the round's own. An attempt that lands late, or is sent again after it was applied,
// fails as a whole on our node, whose name is never used again once a delete of it may
// be outstanding (see retire): it cannot remove a later round's ready.
//
// A member may enter by ready after our listing, before the transaction: the transaction
// also sets our node's data (no one reads it), whose new Stat gives the transaction's
// zxid, returned as end (math.MaxInt64 when applied at a zxid not known; 0 when not
// applied): a member that went in by that ready after our listing marked its node before
// end (see markIn), and Leave waits for it; a member node not so marked is one waiting in
// Enter, which that ready did not let in.
func (d *DoubleBarrier) leaveLast(ctx context.Context, enterGen uint64) (end int64, _ error) {
	res, err := d.client.Transaction(ctx, framework.SetDataOp(d.ourPath, nil, -1),
		framework.DeleteOp(d.ourPath, -1), framework.DeleteOp(d.readyPath, -1))
	if err == nil {
		end = math.MaxInt64
		if len(res) > 0 && res[0].Stat != nil {
			end = res[0].Stat.Mzxid
		}
		return end, nil
	}
	var te *framework.TxnError
	if !errors.As(err, &te) {
		// The outcome is unknown (the request may be in flight, or applied later): the
		// cleanup sends the transaction again, and the member takes a new name.
		d.mu.Lock()
		d.retire, d.cleanupReady = true, true
		d.mu.Unlock()
		return 0, err
	}
	switch {
	case te.Index == 2 && errors.Is(te.Err, framework.ErrNoNode):
		// ready is gone already: we entered by a ready that the last member before us
		// deleted with its node (or it was deleted by hand). Our node was there, so no
		// attempt was applied: ours alone.
		return 0, d.deleteOursNow(ctx)
	case te.Index < 2 && errors.Is(te.Err, framework.ErrNoNode):
		if errors.Is(err, framework.ErrUnknownOutcome) && d.client.Generation() == enterGen {
			// Sent again after it was applied: our node and ready are gone, at a zxid not
			// known (end: any). The name is not used again all the same (an attempt of a
			// lost connection is done with).
			d.mu.Lock()
			d.retire = true
			d.mu.Unlock()
			return math.MaxInt64, nil
		}
		return 0, d.ourNodeGone(enterGen)
	}
	if errors.Is(err, framework.ErrUnknownOutcome) {
		d.mu.Lock()
		d.retire = true
		d.mu.Unlock()
	}
	return 0, err
}

// ourNodeGone is Leave's error when our member node is gone before we deleted it: the
// server removed it because our session ended (ErrSessionLost: the generation changed
// since Enter), or, in the same session, someone else deleted it (ErrNodeDeleted).
func (d *DoubleBarrier) ourNodeGone(enterGen uint64) error {
	if gen := d.client.Generation(); gen != enterGen {
		return fmt.Errorf("%w: member node %s is gone (session generation %d when entered, %d now)",
			ErrSessionLost, d.ourPath, enterGen, gen)
	}
	return fmt.Errorf("%w: member node %s is gone (session generation %d since Enter)",
		ErrNodeDeleted, d.ourPath, enterGen)
}

// deleteOursNow deletes our member node as a step of Leave. When the delete fails, the
// client's background worker may keep trying: Leave then gives the member a new name.
func (d *DoubleBarrier) deleteOursNow(ctx context.Context) error {
	err := d.client.Delete(ctx, d.ourPath, framework.Quietly(), framework.Guaranteed())
	if err != nil {
		d.mu.Lock()
		d.retire = true
		d.mu.Unlock()
	}
	return err
}

// deleteOurs deletes our member node after a failure, guaranteed, and returns nil once
// it is known gone. It tries now, within the caller's context (and at most
// cleanupTimeout), or, when the context has ended already, on a context of its own for
// at most outcomeTimeout, so that the failed Enter or Leave learns whether the node is
// gone and still returns soon after its deadline; what this cuts short goes on in the
// background (GoCleanup, bounded by cleanupTimeout there; a guaranteed delete that
// failed is retried by the client's worker too). When this delete or an earlier one of
// this Leave failed or went to the background, the client may still be deleting the
// node: so that it cannot delete the node of a later Enter (which would have the same
// name), the member takes a new name. A closed client is not proof that the node is
// gone: its close may not have reached the server (a connection lost), and the session,
// with our node, then lives until it expires.
//
// withReady: the member was the last, and its transaction deleting its node and ready
// has an unknown outcome; the cleanup sends that transaction again (see deleteLast).
//
// leaving: the cleanup of a Leave. Once our node is gone, a member whose listing shows no
// member node left but ready deletes ready (see dropLeftoverReady): when every member's
// Leave is cut short, the one whose node goes last removes ready.
func (d *DoubleBarrier) deleteOurs(ctx, grace context.Context, withReady, leaving bool) error {
	path := d.ourPath
	del := func(cctx context.Context, end *withdrawal) error {
		_ = d.created.Wait(cctx) // a create given up on is answered first (bounded by cctx)
		var err error
		switch {
		case withReady:
			err = d.deleteLast(cctx, path)
		case end != nil:
			err = d.withdraw(cctx, path, end)
		default:
			err = d.client.Delete(cctx, path, framework.Quietly(), framework.Guaranteed())
		}
		if err != nil || !leaving {
			return err
		}
		return d.dropLeftoverReady(cctx)
	}
	var end *withdrawal
	if !leaving {
		end = &d.withdrawn
	}
	// Within ctx while it lasts; once it has ended, within its grace.
	bound := ctx
	if ctx.Err() != nil {
		bound = grace
	}
	cctx, cancel := context.WithTimeout(bound, cleanupTimeout)
	err := del(cctx, end)
	queued := err != nil && cctx.Err() != nil // cut short: the caller's context or the bound
	cancel()
	if queued && !d.client.GoCleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = del(cctx, nil)
	}) {
		err = framework.ErrClosed
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil || queued || d.retire {
		d.retireNameLocked()
	}
	return err
}

// withdrawal is what withdraw learnt of the node it deleted.
type withdrawal struct {
	czxid int64 // the node's
	end   int64 // the zxid of its delete
}

// withdraw deletes our node after a failed Enter, in a transaction that also sets its
// data (no one reads it), whose Stat gives the zxid of the delete and the node's czxid
// (w): a ready made between the two may have been made counting us. When the
// transaction's outcome is not known, our node goes by a guaranteed delete (w unknown).
func (d *DoubleBarrier) withdraw(ctx context.Context, path string, w *withdrawal) error {
	res, err := d.client.Transaction(ctx, framework.SetDataOp(path, nil, -1), framework.DeleteOp(path, -1))
	if err == nil {
		if len(res) > 0 && res[0].Stat != nil {
			*w = withdrawal{czxid: res[0].Stat.Czxid, end: res[0].Stat.Mzxid}
		}
		return nil
	}
	var te *framework.TxnError
	if errors.As(err, &te) && te.Index == 0 && errors.Is(te.Err, framework.ErrNoNode) &&
		!errors.Is(err, framework.ErrUnknownOutcome) {
		return nil // gone already (the session ended): never counted since
	}
	return d.client.Delete(ctx, path, framework.Quietly(), framework.Guaranteed())
}

// deleteLast is the cleanup of a last member whose transaction (its node at path and
// ready) has an unknown outcome: it sends the transaction again, which is as safe as the
// first (see leaveLast). When that fails on our node, our node is gone: the first
// attempt was applied, or the session ended. Otherwise our node goes alone, guaranteed;
// ready then stays if no attempt was applied and nobody is left to delete it (the other
// members' fallback deletes it when they find no member node left).
func (d *DoubleBarrier) deleteLast(ctx context.Context, path string) error {
	_, err := d.client.Transaction(ctx, framework.DeleteOp(path, -1), framework.DeleteOp(d.readyPath, -1))
	var te *framework.TxnError
	if err == nil || (errors.As(err, &te) && te.Index == 0 && errors.Is(te.Err, framework.ErrNoNode)) {
		return nil
	}
	if te == nil && ctx.Err() != nil {
		return err // cut short, outcome unknown: the background cleanup sends it again
	}
	if te == nil || te.Index != 1 {
		d.client.Logger().Warn("deleting the member node and ready together failed: the member node goes alone",
			"component", "doublebarrier", "path", path, "err", err)
	}
	return d.client.Delete(ctx, path, framework.Quietly(), framework.Guaranteed())
}

// dropLeftoverReady is the end of a Leave cut short, once our node is gone: it lists the
// barrier, and when no member node is left but ready is, it deletes ready, bound by the
// listing's pzxid, as Leave's fallback does (a next round's ready needs members, which the
// listing would show, or is made after it). The listing follows our delete on this
// session, so of the members whose Leaves are all cut short, the one whose delete was
// applied last sees no member left. A member of a next round that entered meanwhile is
// listed: ready then stays, and that member's Enter does not take it for open (see
// readyIsLive).
func (d *DoubleBarrier) dropLeftoverReady(ctx context.Context) error {
	l, err := d.list(ctx)
	if err != nil || len(l.members) > 0 || !l.ready || l.pzxid <= 0 {
		return err
	}
	return d.client.Delete(ctx, d.readyPath, framework.Quietly(), framework.WithMaxCzxid(l.pzxid), framework.Guaranteed())
}

// retireNameLocked gives the member a new node name; d.mu must be held.
func (d *DoubleBarrier) retireNameLocked() {
	name := newUUID()
	d.ourName, d.ourPath = name, framework.JoinPath(d.path, name)
	d.retire = false
}
