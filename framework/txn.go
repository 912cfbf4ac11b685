package framework

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework/internal/wire"
)

// Op is one operation of a Transaction: CreateOp, DeleteOp, SetDataOp or CheckOp.
type Op struct {
	kind    string
	path    string
	data    []byte
	mode    CreateMode
	acl     []zk.ACL
	version int32
	server  string // the full server path (chroot and namespace), when not the client's: a guard's check
}

// CreateOp creates a node in a transaction (acl nil: the client's ACL provider's). Container
// and TTL modes are refused (ErrInvalidArgument): a transaction cannot make them.
func CreateOp(path string, data []byte, mode CreateMode, acl []zk.ACL) Op {
	return Op{kind: "create", path: path, data: data, mode: mode, acl: acl}
}

// DeleteOp deletes a node in a transaction if its version matches (-1: any).
func DeleteOp(path string, version int32) Op { return Op{kind: "delete", path: path, version: version} }

// SetDataOp sets a node's data in a transaction if its version matches (-1: any).
func SetDataOp(path string, data []byte, version int32) Op {
	return Op{kind: "setData", path: path, data: data, version: version}
}

// CheckOp makes a transaction fail unless the node at path exists and, when version is
// not -1, is at that version. Version -1 matches any version: the transaction then fails
// (ErrNoNode) only when the node does not exist, which makes CheckOp(node, -1) the op that
// binds a write to the life of an owner node (see Guard). A check cannot compare a czxid:
// a node deleted and made again at the same path passes it.
func CheckOp(path string, version int32) Op { return Op{kind: "check", path: path, version: version} }

// OpResult is the result of one operation of a transaction.
type OpResult struct {
	Path string // the created path (without namespace), for CreateOp
	Stat *Stat  // the new Stat, for SetDataOp
	Err  error  // this operation's error when the transaction failed
}

// ErrRolledBack is the error of each op of a failed transaction other than the one that
// failed: the op itself was fine, but the transaction applied nothing.
var ErrRolledBack = errors.New("framework: rolled back")

// TxnError is the error of a failed transaction: which op failed (its index in the
// transaction, its kind and path) and why. The other ops were rolled back. It unwraps to
// the failed op's cause, so errors.Is(err, ErrNoNode) and the like work.
type TxnError struct {
	Index int    // the index of the op that failed
	Op    string // its kind: create, delete, setData or check
	Path  string // its path (without namespace)
	Err   error  // why it failed
	N     int    // how many ops the transaction had
}

// Error says which op failed, why, and that the others were rolled back.
func (e *TxnError) Error() string {
	var others []string
	for i := range e.N {
		if i != e.Index {
			others = append(others, strconv.Itoa(i))
		}
	}
	msg := fmt.Sprintf("framework: transaction op %d (%s %s) failed: %v", e.Index, e.Op, e.Path, e.Err)
	if len(others) > 0 {
		msg += "; ops " + strings.Join(others, ", ") + " rolled back"
	}
	return msg
}

// Unwrap returns the failed op's cause.
func (e *TxnError) Unwrap() error { return e.Err }

// Transaction runs ops atomically: all of them or none. It returns a result per op; when
// it fails, the error is a *TxnError naming the op that failed; that op's result carries
// its cause and every other op's result carries an error wrapping ErrRolledBack. A
// transaction whose encoded size (counted exactly, ACLs included) comes within 64 bytes of
// the packet limit (WithMaxPacketSize) is refused before anything is sent, with a
// *DataTooLargeError. A transaction cut short by Close after an attempt of it may have
// been applied unanswered (its connection lost, or Close given up its wait, while it was
// in flight) fails with an error matching ErrClosed and ErrUnknownOutcome.
func (c *Client) Transaction(ctx context.Context, ops ...Op) ([]OpResult, error) {
	res, err, _ := c.transaction(ctx, 0, ops)
	return res, err
}

// transaction is Transaction, whose errors other than a *TxnError name ops[name]'s path,
// and which also reports whether an attempt was handed to the connection (sent: it may
// have reached the server).
func (c *Client) transaction(ctx context.Context, name int, ops []Op) (_ []OpResult, _ error, attempted bool) {
	if len(ops) == 0 {
		return nil, fmt.Errorf("framework: %w: empty transaction", ErrInvalidArgument), false
	}
	reqs := make([]any, len(ops))
	for i, op := range ops {
		validate := ValidatePath
		if op.kind == "create" && op.mode.sequential() {
			validate = ValidatePathSequential
		}
		if err := validate(op.path); err != nil {
			return nil, opErr("transaction "+op.kind, op.path, err), false
		}
		full := c.fullPath(op.path)
		if op.server != "" {
			full = op.server
		}
		switch op.kind {
		case "create":
			if op.mode == Container { // sent as a plain create, which ZooKeeper refuses ("api error")
				return nil, opErr("transaction create", op.path, fmt.Errorf("framework: %w: a container cannot be created in a transaction", ErrInvalidArgument)), false
			}
			if op.mode.ttl() || op.mode < Persistent || op.mode > PersistentSequentialWithTTL {
				return nil, opErr("transaction create", op.path, fmt.Errorf("framework: %w: mode %d not allowed in a transaction", ErrInvalidArgument, op.mode)), false
			}
			acl := op.acl
			if len(acl) == 0 {
				acl = c.opts.aclProvider.ACLForPath(op.path)
			}
			reqs[i] = &zk.CreateRequest{Path: full, Data: op.data, Acl: acl, Flags: op.mode.flags()}
		case "delete":
			reqs[i] = &zk.DeleteRequest{Path: full, Version: op.version}
		case "setData":
			reqs[i] = &zk.SetDataRequest{Path: full, Data: op.data, Version: op.version}
		case "check":
			reqs[i] = &zk.CheckVersionRequest{Path: full, Version: op.version}
		default:
			return nil, fmt.Errorf("framework: %w: zero Op at index %d", ErrInvalidArgument, i), false
		}
	}
	if size := multiSize(reqs); size+txnMargin > c.opts.maxPacket {
		return nil, &DataTooLargeError{Path: ops[name].path, Size: size, Limit: c.opts.maxPacket - txnMargin}, false
	}
	var resp []zk.MultiResponse
	var sent resent
	err := c.withRetry(ctx, func(ctx context.Context, conn zkConn) error {
		var err error
		attempted = true
		resp, err = call(c, ctx, "multi", func() ([]zk.MultiResponse, error) { return conn.Multi(reqs...) }, nil)
		sent.note(err)
		return err
	})
	results := make([]OpResult, len(ops))
	failed := -1
	for i := range results {
		if i < len(resp) {
			results[i] = OpResult{Path: c.relPath(resp[i].String), Stat: resp[i].Stat, Err: resp[i].Error}
			if resp[i].Error != nil && failed < 0 && !isRolledBackCode(resp[i].Error) {
				failed = i
			}
		}
	}
	if failed >= 0 {
		te := &TxnError{Index: failed, Op: ops[failed].kind, Path: ops[failed].path, Err: resp[failed].Error, N: len(ops)}
		for i := range results {
			if i != failed {
				results[i] = OpResult{Err: fmt.Errorf("%w: op %d (%s %s) failed", ErrRolledBack, failed, te.Op, te.Path)}
			}
		}
		if bool(sent) {
			return results, &unknownOutcomeError{err: te}, attempted
		}
		return results, te, attempted
	}
	if err != nil && bool(sent) && errors.Is(err, ErrClosed) && !errors.Is(err, ErrUnknownOutcome) {
		// Closed after an attempt that may have been applied: nobody can say whether it was.
		err = &unknownOutcomeError{err: err}
	}
	if err != nil {
		return results, opErr("transaction", ops[name].path, err), attempted
	}
	return results, nil, attempted
}

// isRolledBackCode reports an operation of a failed transaction that did not fail
// itself: ZooKeeper's RUNTIMEINCONSISTENCY (-2), which it gives the ops after the one
// that failed (go-zookeeper has no name for it), or our connection's wire.ErrRolledBack.
func isRolledBackCode(err error) bool {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Code == wire.CodeRuntimeInconsistency
	}
	return errors.Is(err, wire.ErrRolledBack) || err.Error() == "unknown error: -2"
}
