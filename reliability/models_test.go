package reliability_test

import (
	"fmt"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
)

// The sequential specifications that recorded histories are checked against (with
// porcupine, as etcd's robustness tests do). Facts carried over from etcd's models:
//
//   - an operation whose outcome is unknown (its context ended, it timed out, its
//     connection was lost) is recorded with the return time of the end of the history
//     and an output that the model accepts whatever the state: the model applies it.
//     Since it may be linearized at any point after its call, up to the end, "applied
//     at the end" stands for "never applied": together they cover both outcomes;
//   - a read that failed tells nothing and is not recorded.
//
// Each Step is a pure function of its arguments, as porcupine requires.

// result is the definite outcome of a ZooKeeper write or read, or unknown.
type result int

const (
	resOK result = iota
	resNoNode
	resNodeExists
	resBadVersion
	resUnknown
)

func (r result) String() string {
	return [...]string{"ok", "NoNode", "NodeExists", "BadVersion", "unknown"}[r]
}

// # Register per znode

// regKeys is how many znodes the register workload uses; a transaction spans two.
const regKeys = 2

// znode is one node of the register: whether it exists, its data and its data version.
type znode struct {
	exists  bool
	data    string
	version int32
}

// regState is the register: every key's node. It is comparable, so porcupine's default
// equality works.
type regState [regKeys]znode

type regKind int

const (
	regCreate      regKind = iota // create(key, data)
	regGet                        // getData(key)
	regSet                        // setData(key, data, -1)
	regSetV                       // setData(key, data, version)
	regDelete                     // delete(key, -1)
	regDeleteV                    // delete(key, version)
	regTxnCheck                   // multi: check(key, version) + setData(other, data, -1)
	regTxnRecreate                // multi: delete(key, -1) + create(key, data)
)

var regKindNames = [...]string{"create", "get", "set", "setV", "delete", "deleteV", "txn(check,set)", "txn(delete,create)"}

// regInput is one call on the register.
type regInput struct {
	kind    regKind
	key     int
	data    string
	version int32
}

// regOutput is what the call returned: its result, for get the data and version, for a
// set the new version, for a failed transaction the index of the op that failed.
type regOutput struct {
	res     result
	data    string
	version int32
	index   int
}

// regApply runs in on st: the state after it and the output a correct server returns.
func regApply(st regState, in regInput) (regState, regOutput) {
	other := (in.key + 1) % regKeys
	n := st[in.key]
	switch in.kind {
	case regCreate:
		if n.exists {
			return st, regOutput{res: resNodeExists}
		}
		st[in.key] = znode{exists: true, data: in.data}
		return st, regOutput{res: resOK}
	case regGet:
		if !n.exists {
			return st, regOutput{res: resNoNode}
		}
		return st, regOutput{res: resOK, data: n.data, version: n.version}
	case regSet, regSetV:
		if !n.exists {
			return st, regOutput{res: resNoNode}
		}
		if in.kind == regSetV && n.version != in.version {
			return st, regOutput{res: resBadVersion}
		}
		st[in.key] = znode{exists: true, data: in.data, version: n.version + 1}
		return st, regOutput{res: resOK, version: n.version + 1}
	case regDelete, regDeleteV:
		if !n.exists {
			return st, regOutput{res: resNoNode}
		}
		if in.kind == regDeleteV && n.version != in.version {
			return st, regOutput{res: resBadVersion}
		}
		st[in.key] = znode{}
		return st, regOutput{res: resOK}
	case regTxnCheck:
		if !n.exists {
			return st, regOutput{res: resNoNode, index: 0}
		}
		if n.version != in.version {
			return st, regOutput{res: resBadVersion, index: 0}
		}
		o := st[other]
		if !o.exists {
			return st, regOutput{res: resNoNode, index: 1}
		}
		st[other] = znode{exists: true, data: in.data, version: o.version + 1}
		return st, regOutput{res: resOK}
	case regTxnRecreate:
		if !n.exists {
			return st, regOutput{res: resNoNode, index: 0}
		}
		st[in.key] = znode{exists: true, data: in.data} // a recreated node starts at version 0
		return st, regOutput{res: resOK}
	}
	return st, regOutput{res: -1} // no such call: matches no output
}

// registerModel is the register: each znode a (exists, data, version) cell.
var registerModel = porcupine.Model{
	Init: func() any { return regState{} },
	Step: func(state, input, output any) (bool, any) {
		in, out := input.(regInput), output.(regOutput)
		next, want := regApply(state.(regState), in)
		if out.res == resUnknown {
			return true, next
		}
		if out.res != want.res {
			return false, state
		}
		switch {
		case in.kind == regGet && out.res == resOK:
			return out.data == want.data && out.version == want.version, next
		case (in.kind == regSet || in.kind == regSetV) && out.res == resOK:
			return out.version == want.version, next
		case (in.kind == regTxnCheck || in.kind == regTxnRecreate) && out.res != resOK:
			return out.index == want.index, next
		}
		return true, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		call := fmt.Sprintf("%s(k%d", regKindNames[in.kind], in.key)
		if in.data != "" {
			call += ", " + in.data
		}
		if in.kind == regSetV || in.kind == regDeleteV || in.kind == regTxnCheck {
			call += fmt.Sprintf(", v%d", in.version)
		}
		call += ")"
		switch {
		case out.res == resOK && in.kind == regGet:
			return fmt.Sprintf("%s -> %q v%d", call, out.data, out.version)
		case out.res == resOK && (in.kind == regSet || in.kind == regSetV):
			return fmt.Sprintf("%s -> v%d", call, out.version)
		case out.res != resOK && out.res != resUnknown && (in.kind == regTxnCheck || in.kind == regTxnRecreate):
			return fmt.Sprintf("%s -> %s at op %d", call, out.res, out.index)
		}
		return fmt.Sprintf("%s -> %s", call, out.res)
	},
	DescribeState: func(state any) string {
		s := ""
		for k, n := range state.(regState) {
			if n.exists {
				s += fmt.Sprintf("k%d=%q v%d ", k, n.data, n.version)
			} else {
				s += fmt.Sprintf("k%d=none ", k)
			}
		}
		return s
	},
}

// # Counter (recipes/atomic)

type ctrKind int

const (
	ctrIncrement ctrKind = iota
	ctrCompareAndSet
	ctrGet
)

// ctrInput is one call on the counter; expected and n are CompareAndSet's.
type ctrInput struct {
	kind        ctrKind
	expected, n int64
}

// ctrOutput is the call's Result (Succeeded, Pre, Post); unknown when it returned an
// error matching atomic.ErrUnknownOutcome, failed when it returned another error (the
// recipe then promises that nothing was written).
type ctrOutput struct {
	unknown   bool
	failed    bool
	succeeded bool
	pre, post int64
}

// counterModel is a 64-bit counter: no increment lost, none applied twice, and a
// compare-and-set that succeeded found the expected value and applied once. A call with
// Succeeded false and no error wrote nothing (the optimistic tries lost the race). A
// compare-and-set that did not succeed is not taken as proof that the counter held
// another value: like Curator's, it compares with what the client's server returned,
// and ZooKeeper reads are not linearizable across clients (a follower may lag behind an
// acknowledged write), so it may fail spuriously — a weak compare-and-set.
var counterModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(int64), input.(ctrInput), output.(ctrOutput)
		if out.failed {
			return in.kind != ctrGet, s
		}
		switch in.kind {
		case ctrIncrement:
			switch {
			case out.unknown:
				return true, s + 1
			case out.succeeded:
				return out.pre == s && out.post == s+1, s + 1
			}
			return true, s
		case ctrCompareAndSet:
			switch {
			case out.unknown:
				if s == in.expected {
					return true, in.n
				}
				return true, s
			case out.succeeded:
				return s == in.expected && out.post == in.n, in.n
			}
			return true, s
		case ctrGet:
			return out.post == s, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(ctrInput), output.(ctrOutput)
		call := map[ctrKind]string{ctrIncrement: "increment()", ctrGet: "get()",
			ctrCompareAndSet: fmt.Sprintf("compareAndSet(%d, %d)", in.expected, in.n)}[in.kind]
		switch {
		case out.unknown:
			return call + " -> unknown"
		case out.failed:
			return call + " -> failed, nothing written"
		case in.kind == ctrGet:
			return fmt.Sprintf("%s -> %d", call, out.post)
		case out.succeeded:
			return fmt.Sprintf("%s -> ok %d→%d", call, out.pre, out.post)
		}
		return call + " -> not done"
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
}

// # Lock-protected register with fencing tokens

// fencedState is the store behind a lock: its value and the highest token it accepted.
type fencedState struct {
	value, highest int64
}

// fencedInput is a read of the store, or a write of read+1 by a holder whose lease has
// token and who read the value read.
type fencedInput struct {
	write       bool
	token, read int64
}

// fencedOutput is what the store answered: the value read, or whether the write was
// accepted.
type fencedOutput struct {
	value    int64
	accepted bool
}

// fencedModel is the lock-protected register: a read returns the value; a write is
// accepted only with a token no older than every token accepted before, and only if the
// holder's read is still the value (the lock let no one write in between: no lost
// update); a refused write changes nothing, and only an older token may be refused.
var fencedModel = porcupine.Model{
	Init: func() any { return fencedState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(fencedState), input.(fencedInput), output.(fencedOutput)
		if !in.write {
			return out.value == s.value, s
		}
		if !out.accepted {
			return in.token < s.highest, s
		}
		return in.token >= s.highest && in.read == s.value, fencedState{value: in.read + 1, highest: in.token}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(fencedInput), output.(fencedOutput)
		if !in.write {
			return fmt.Sprintf("read() -> %d", out.value)
		}
		verdict := "refused"
		if out.accepted {
			verdict = "accepted"
		}
		return fmt.Sprintf("write(token %d, %d) -> %s", in.token, in.read+1, verdict)
	},
	DescribeState: func(state any) string {
		s := state.(fencedState)
		return fmt.Sprintf("value %d, highest token %d", s.value, s.highest)
	},
}

// TestLinearModels checks the models themselves on small hand-written histories (no
// server): what each must accept, and what it must reject.
func TestLinearModels(t *testing.T) {
	op := func(client int, in, out any, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
	}
	const end = 1000 // the end of every history: an unknown operation's return
	create := regInput{kind: regCreate, key: 0, data: "a"}
	get := regInput{kind: regGet, key: 0}
	cases := []struct {
		name  string
		model porcupine.Model
		ops   []porcupine.Operation
		ok    bool
	}{
		{"register: create then read", registerModel, []porcupine.Operation{
			op(0, create, regOutput{res: resOK}, 0, 10),
			op(1, get, regOutput{res: resOK, data: "a"}, 20, 30)}, true},
		{"register: read misses an acknowledged create", registerModel, []porcupine.Operation{
			op(0, create, regOutput{res: resOK}, 0, 10),
			op(1, get, regOutput{res: resNoNode}, 20, 30)}, false},
		{"register: unknown create, then seen", registerModel, []porcupine.Operation{
			op(0, create, regOutput{res: resUnknown}, 0, end),
			op(1, get, regOutput{res: resOK, data: "a"}, 20, 30)}, true},
		{"register: unknown create, never seen", registerModel, []porcupine.Operation{
			op(0, create, regOutput{res: resUnknown}, 0, end),
			op(1, get, regOutput{res: resNoNode}, 20, 30)}, true},
		{"register: set applied twice", registerModel, []porcupine.Operation{
			op(0, create, regOutput{res: resOK}, 0, 10),
			op(0, regInput{kind: regSet, key: 0, data: "b"}, regOutput{res: resOK, version: 2}, 20, 30)}, false},
		{"register: recreate resets the version", registerModel, []porcupine.Operation{
			op(0, create, regOutput{res: resOK}, 0, 10),
			op(0, regInput{kind: regSet, key: 0, data: "b"}, regOutput{res: resOK, version: 1}, 20, 30),
			op(0, regInput{kind: regTxnRecreate, key: 0, data: "c"}, regOutput{res: resOK}, 40, 50),
			op(1, regInput{kind: regSetV, key: 0, data: "d", version: 0}, regOutput{res: resOK, version: 1}, 60, 70)}, true},
		{"register: transaction check fails on the first op", registerModel, []porcupine.Operation{
			op(0, create, regOutput{res: resOK}, 0, 10),
			op(0, regInput{kind: regTxnCheck, key: 0, data: "x", version: 3}, regOutput{res: resBadVersion, index: 0}, 20, 30)}, true},
		{"register: transaction blamed on the wrong op", registerModel, []porcupine.Operation{
			op(0, create, regOutput{res: resOK}, 0, 10),
			op(0, regInput{kind: regTxnCheck, key: 0, data: "x", version: 0}, regOutput{res: resNoNode, index: 0}, 20, 30)}, false},
		{"counter: increments and a read", counterModel, []porcupine.Operation{
			op(0, ctrInput{kind: ctrIncrement}, ctrOutput{succeeded: true, pre: 0, post: 1}, 0, 10),
			op(1, ctrInput{kind: ctrIncrement}, ctrOutput{succeeded: true, pre: 1, post: 2}, 5, 20),
			op(2, ctrInput{kind: ctrGet}, ctrOutput{post: 2}, 30, 40)}, true},
		{"counter: lost increment", counterModel, []porcupine.Operation{
			op(0, ctrInput{kind: ctrIncrement}, ctrOutput{succeeded: true, pre: 0, post: 1}, 0, 10),
			op(1, ctrInput{kind: ctrIncrement}, ctrOutput{succeeded: true, pre: 0, post: 1}, 20, 30)}, false},
		{"counter: unknown increment applied or not", counterModel, []porcupine.Operation{
			op(0, ctrInput{kind: ctrIncrement}, ctrOutput{unknown: true}, 0, end),
			op(1, ctrInput{kind: ctrGet}, ctrOutput{post: 0}, 10, 20),
			op(1, ctrInput{kind: ctrGet}, ctrOutput{post: 1}, 30, 40)}, true},
		{"counter: unknown increment applied twice", counterModel, []porcupine.Operation{
			op(0, ctrInput{kind: ctrIncrement}, ctrOutput{unknown: true}, 0, end),
			op(1, ctrInput{kind: ctrGet}, ctrOutput{post: 2}, 30, 40)}, false},
		{"counter: failed call wrote nothing", counterModel, []porcupine.Operation{
			op(0, ctrInput{kind: ctrIncrement}, ctrOutput{failed: true}, 0, 10),
			op(1, ctrInput{kind: ctrGet}, ctrOutput{post: 1}, 30, 40)}, false},
		{"counter: compare-and-set twice from the same value", counterModel, []porcupine.Operation{
			op(0, ctrInput{kind: ctrCompareAndSet, expected: 0, n: 1}, ctrOutput{succeeded: true, pre: 0, post: 1}, 0, 10),
			op(1, ctrInput{kind: ctrCompareAndSet, expected: 0, n: 1}, ctrOutput{succeeded: true, pre: 0, post: 1}, 20, 30)}, false},
		{"fenced: newer token after older", fencedModel, []porcupine.Operation{
			op(0, fencedInput{write: true, token: 1, read: 0}, fencedOutput{accepted: true}, 0, 10),
			op(1, fencedInput{write: true, token: 2, read: 1}, fencedOutput{accepted: true}, 20, 30)}, true},
		{"fenced: older token accepted after a newer one", fencedModel, []porcupine.Operation{
			op(1, fencedInput{write: true, token: 2, read: 0}, fencedOutput{accepted: true}, 0, 10),
			op(0, fencedInput{write: true, token: 1, read: 1}, fencedOutput{accepted: true}, 20, 30)}, false},
		{"fenced: lost update", fencedModel, []porcupine.Operation{
			op(0, fencedInput{write: true, token: 1, read: 0}, fencedOutput{accepted: true}, 0, 10),
			op(1, fencedInput{write: true, token: 2, read: 0}, fencedOutput{accepted: true}, 20, 30)}, false},
		{"fenced: a current token refused", fencedModel, []porcupine.Operation{
			op(0, fencedInput{write: true, token: 1, read: 0}, fencedOutput{accepted: false}, 0, 10)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.ok, porcupine.CheckOperations(c.model, c.ops))
		})
	}
}
