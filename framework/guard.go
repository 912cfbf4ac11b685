package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrFenced matches the error of a guarded write (see Guard) that was not applied because
// its guard no longer holds: the lease or term it came from had ended when the write was
// about to be sent, or the server found the guard's owner node gone and refused the whole
// transaction. Nothing of the write was applied. A guarded write whose outcome is unknown
// (sent again after a connection loss, then refused) matches ErrUnknownOutcome instead,
// never ErrFenced: if its first attempt was applied, it was applied while the owner node
// still existed.
var ErrFenced = errors.New("framework: fenced: the lease or term that guards this write has ended")

// Guard makes writes conditional on owner nodes: a lock's node, a semaphore lease's node,
// a leader's latch node. Its op (Op, Ops) goes into the same transaction as the write, so
// the server applies the write only while every owner node exists; once the lease ended
// and its node was deleted (released, or its session expired), the server refuses the
// write. It is the ZooKeeper-side counterpart of a fencing token, which protects a store
// outside ZooKeeper: etcd's Mutex.IsOwner() is the model.
//
// Leases and terms hand out guards (mutex.Lease.Guard, leader.Term.Guard, ...). A guard
// from a lease also refuses, before sending anything, a write made once the lease ended
// on the client's side (Done closed: released, or possibly lost), even while its node may
// still exist.
//
// A guard checks its owner nodes by path: CheckOp cannot compare a czxid. That is sound
// only for a node whose path is never made again, which holds for the nodes the recipes
// hand out guards for: each carries a protected prefix with a UUID fresh for the create
// that made it (_c_<uuid>-...), so no later create makes a node at that path, even after
// the parent is deleted and its sequence numbers start again. The czxid recorded with the
// guard is the one the lease read when it made the guard (with the node's ephemeral owner
// checked to be this session); a guard made with NewGuard for any other node is only as
// good as that node's name is unique.
//
// A Guard is a value, safe for concurrent use; the zero Guard guards nothing (see IsZero).
type Guard struct {
	owners []guardOwner
}

type guardOwner struct {
	path  string
	czxid int64
	ended func() bool // nil: only the server's check
}

// NewGuard returns a guard on the node at path (without namespace), whose czxid is czxid
// (0: unknown; it is informational). ended, when not nil, is asked before each guarded
// write is sent: when it returns true the write is refused with ErrFenced at once. With
// path "", the guard checks no node: it only refuses before sending once ended is true
// (to be joined, with And, to guards that check nodes).
func NewGuard(path string, czxid int64, ended func() bool) Guard {
	return Guard{owners: []guardOwner{{path: path, czxid: czxid, ended: ended}}}
}

// And returns a guard that holds while both g and other hold (a multi-lock's guard is its
// locks' guards joined).
func (g Guard) And(other Guard) Guard {
	return Guard{owners: append(slices.Clip(g.owners), other.owners...)}
}

// IsZero reports whether g guards nothing.
func (g Guard) IsZero() bool { return len(g.owners) == 0 }

// Path returns the path of the guard's first owner node ("" when it checks none).
func (g Guard) Path() string {
	for _, o := range g.owners {
		if o.path != "" {
			return o.path
		}
	}
	return ""
}

// Czxid returns the czxid of the guard's first owner node as recorded when the guard was
// made (0: unknown, or no node).
func (g Guard) Czxid() int64 {
	for _, o := range g.owners {
		if o.path != "" {
			return o.czxid
		}
	}
	return 0
}

// Ops returns the guard's ops, one CheckOp(path, -1) per owner node: put them first in a
// Transaction with the writes they guard. The transaction then fails with ErrNoNode on the
// check (a *TxnError) once an owner node is gone. Prefer GuardedTransaction, which also
// refuses before sending when the lease already ended and reports ErrFenced.
func (g Guard) Ops() []Op {
	var ops []Op
	for _, o := range g.owners {
		if o.path != "" && !slices.ContainsFunc(ops, func(op Op) bool { return op.path == o.path }) {
			ops = append(ops, CheckOp(o.path, -1))
		}
	}
	return ops
}

// Op returns the op of a guard with one owner node: CheckOp(path, -1). For a guard with
// several (And), use Ops. A guard with no node has the zero Op, which Transaction refuses.
func (g Guard) Op() Op {
	if p := g.Path(); p != "" {
		return CheckOp(p, -1)
	}
	return Op{}
}

// Ended reports whether the lease or term behind the guard has ended on the client's
// side (always false for guards made without an ended func).
func (g Guard) Ended() bool {
	for _, o := range g.owners {
		if o.ended != nil && o.ended() {
			return true
		}
	}
	return false
}

// fencedError is a guarded write refused: before sending (Ended) or by the server (an
// owner node gone).
type fencedError struct {
	path  string
	cause error // the server's refusal (a *TxnError), or nil when refused before sending
}

func (e *fencedError) Error() string {
	if e.cause == nil {
		return fmt.Sprintf("%v: refused before sending (guard %s)", ErrFenced, e.path)
	}
	return fmt.Sprintf("%v: refused by the server: owner node %s is gone", ErrFenced, e.path)
}

func (e *fencedError) Unwrap() error { return ErrFenced }

// fenced is the error of a write refused before it was sent because the guard's lease or
// term ended (Ended).
func (g Guard) fenced() error { return &fencedError{path: g.Path()} }

// guardKey is the context key of WithGuard.
type guardKey struct{}

// WithGuard returns a context carrying g: the recipes' writes that say so in their doc
// (atomic's changes, sharedcount's TrySet and Set, persistentnode's SetData, the queues'
// Put) run as guarded transactions under it, and fail with ErrFenced once g no longer
// holds. Like a deadline, a guard only restricts what is done under the context: it
// travels to every call the context is handed to, and a write that does not support
// guards is not made conditional by it (it is not refused either). A second WithGuard
// joins the guards (And). The zero Guard leaves ctx as it is.
func WithGuard(ctx context.Context, g Guard) context.Context {
	if g.IsZero() {
		return ctx
	}
	if prev, ok := GuardFrom(ctx); ok {
		g = prev.And(g)
	}
	return context.WithValue(ctx, guardKey{}, g)
}

// GuardFrom returns the guard that ctx carries (WithGuard), if any.
func GuardFrom(ctx context.Context) (Guard, bool) {
	g, ok := ctx.Value(guardKey{}).(Guard)
	return g, ok && !g.IsZero()
}

// GuardedTransaction runs ops as one transaction together with g's checks, placed first:
// the server applies ops only while every owner node of g exists. It returns the results
// of ops (without the checks') and:
//   - nil when applied;
//   - an error matching ErrFenced when nothing was applied because g no longer holds: the
//     lease or term ended before the transaction was sent (nothing is sent), or the server
//     found an owner node gone;
//   - a *TxnError whose Index is that of the op of ops that failed (the guard held);
//   - an error matching ErrUnknownOutcome, as Transaction's, when the transaction was sent
//     again after a connection loss and then failed (its guard's check included: the first
//     attempt may have been applied, while the owner node still existed), or when ctx ended
//     while it was in flight (also matching ctx's error).
//
// The zero Guard runs ops as Transaction does.
func (c *Client) GuardedTransaction(ctx context.Context, g Guard, ops ...Op) ([]OpResult, error) {
	if len(ops) == 0 {
		return nil, fmt.Errorf("%w: empty transaction", ErrInvalidArgument)
	}
	if g.Ended() {
		return nil, g.fenced()
	}
	checks := g.Ops()
	all := append(checks, ops...)
	res, err := c.Transaction(ctx, all...)
	if len(res) >= len(checks) {
		res = res[len(checks):]
	}
	if err == nil {
		return res, nil
	}
	var te *TxnError
	if errors.As(err, &te) {
		if errors.Is(err, ErrUnknownOutcome) {
			return res, err
		}
		if te.Index < len(checks) {
			if errors.Is(te.Err, ErrNoNode) {
				return res, &fencedError{path: te.Path, cause: te}
			}
			return res, err
		}
		shifted := *te
		shifted.Index -= len(checks)
		shifted.N -= len(checks)
		return res, &shifted
	}
	if mayHaveApplied(err) && !errors.Is(err, ErrUnknownOutcome) {
		// Given up while it may have been in flight: applied or not, nobody can say.
		return res, &unknownOutcomeError{err: err}
	}
	return res, err
}
