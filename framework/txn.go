package framework

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Op is one operation of a Transaction: CreateOp, DeleteOp, SetDataOp or CheckOp.
type Op struct {
	kind    string
	path    string
	data    []byte
	mode    CreateMode
	acl     []zk.ACL
	version int32
}

// CreateOp creates a node in a transaction (acl nil: the client's ACL provider's).
func CreateOp(path string, data []byte, mode CreateMode, acl []zk.ACL) Op {
	return Op{kind: "create", path: path, data: data, mode: mode, acl: acl}
}

// DeleteOp deletes a node in a transaction if its version matches (-1: any).
func DeleteOp(path string, version int32) Op { return Op{kind: "delete", path: path, version: version} }

// SetDataOp sets a node's data in a transaction if its version matches (-1: any).
func SetDataOp(path string, data []byte, version int32) Op {
	return Op{kind: "setData", path: path, data: data, version: version}
}

// CheckOp makes a transaction fail unless the node's version matches.
func CheckOp(path string, version int32) Op { return Op{kind: "check", path: path, version: version} }

// OpResult is the result of one operation of a transaction.
type OpResult struct {
	Path string // the created path (without namespace), for CreateOp
	Stat *Stat  // the new Stat, for SetDataOp
	Err  error  // this operation's error when the transaction failed
}

// Transaction runs ops atomically: all of them or none. It returns a result per op; when
// it fails, the error names the first failing op and each result carries its own error.
func (c *Client) Transaction(ctx context.Context, ops ...Op) ([]OpResult, error) {
	if len(ops) == 0 {
		return nil, fmt.Errorf("%w: empty transaction", ErrInvalidArgument)
	}
	reqs := make([]any, len(ops))
	size := 0
	for i, op := range ops {
		validate := ValidatePath
		if op.kind == "create" && op.mode.sequential() {
			validate = ValidatePathSequential
		}
		if err := validate(op.path); err != nil {
			return nil, opErr("transaction "+op.kind, op.path, err)
		}
		size += len(op.data) + len(op.path) + 64
		full := c.fullPath(op.path)
		switch op.kind {
		case "create":
			if op.mode.ttl() || op.mode < Persistent || op.mode > PersistentSequentialWithTTL {
				return nil, opErr("transaction create", op.path, fmt.Errorf("%w: mode %d not allowed in a transaction", ErrInvalidArgument, op.mode))
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
			return nil, fmt.Errorf("%w: zero Op at index %d", ErrInvalidArgument, i)
		}
	}
	if size+packetOverhead > c.opts.maxPacket {
		return nil, &DataTooLargeError{Path: ops[0].path, Size: size, Limit: c.opts.maxPacket - packetOverhead}
	}
	var resp []zk.MultiResponse
	err := c.withRetry(ctx, func(ctx context.Context, conn *zk.Conn) error {
		var err error
		resp, err = call(c, ctx, "multi", func() ([]zk.MultiResponse, error) { return conn.Multi(reqs...) }, nil)
		return err
	})
	results := make([]OpResult, len(ops))
	var first error
	for i := range results {
		if i < len(resp) {
			results[i] = OpResult{Path: c.relPath(resp[i].String), Stat: resp[i].Stat, Err: resp[i].Error}
			if resp[i].Error != nil && first == nil {
				first = opErr("transaction "+ops[i].kind, ops[i].path, resp[i].Error)
			}
		}
	}
	if err != nil {
		if first != nil {
			return results, first
		}
		return results, opErr("transaction", ops[0].path, err)
	}
	return results, nil
}
