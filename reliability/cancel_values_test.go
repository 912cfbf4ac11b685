package reliability_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
)

// Versioned updates in the cancellation fuzzer: the shared count's TrySet and
// the atomic counter's increment, each cancelled at the fuzzer's moments, one of them on a
// node the peer deletes and makes again between the victim's read and its write. Their
// checker asserts conservation, not only "no leftover": a versioned update that reported
// success is a write the server applied to the node that was read; one that reported a
// conflict (or an error that says nothing was sent) wrote nothing; one that reported an
// unknown outcome was applied once or not at all; one that reported ErrNodeReplaced was
// applied to a node made again.

// nodeState is a node as one read saw it.
type nodeState struct {
	data    []byte
	czxid   int64
	version int32
}

func (s nodeState) String() string {
	return fmt.Sprintf("{data % x, czxid %#x, version %d}", s.data, s.czxid, s.version)
}

// versionedWrite is what a versioned update did, as its caller saw it.
type versionedWrite struct {
	read    nodeState // the node whose value the update started from
	before  nodeState // the node just before the write could be sent (read, unless made again)
	written []byte    // the value the update would write
	err     error     // the call's error; nil: it reported success
}

// checkVersionedWrite checks a versioned update's report against the node as it is now
// (no other write since). It returns what is wrong, or nil.
func checkVersionedWrite(w versionedWrite, now nodeState) error {
	unchanged := now.czxid == w.before.czxid && now.version == w.before.version && bytes.Equal(now.data, w.before.data)
	appliedOnce := now.czxid == w.before.czxid && now.version == w.before.version+1 && bytes.Equal(now.data, w.written)
	switch {
	case w.err == nil:
		if now.czxid != w.read.czxid {
			return fmt.Errorf("reported success, but the node now (%v) is not the node read (%v): the write went to a node made again", now, w.read)
		}
		if now.version != w.read.version+1 || !bytes.Equal(now.data, w.written) {
			return fmt.Errorf("reported success writing % x at version %d, but the node read is now %v", w.written, w.read.version, now)
		}
	case errors.Is(w.err, sharedcount.ErrNodeReplaced) || errors.Is(w.err, atomic.ErrNodeReplaced):
		if now.czxid == w.read.czxid || !bytes.Equal(now.data, w.written) {
			return fmt.Errorf("reported a write to a node made again (%v), but the node now is %v (read: %v)", w.err, now, w.read)
		}
	case errors.Is(w.err, framework.ErrUnknownOutcome):
		if !unchanged && !appliedOnce {
			return fmt.Errorf("reported an unknown outcome (%v): the node must be as before (%v) or hold % x once, but it is %v", w.err, w.before, w.written, now)
		}
	default: // a conflict, or an error that says nothing was sent
		if !unchanged {
			return fmt.Errorf("reported %v, which says nothing was written, but the node changed from %v to %v", w.err, w.before, now)
		}
	}
	return nil
}

// readState reads path as the peer sees it, after a sync.
func readState(ctx context.Context, c *framework.Client, path string) (nodeState, error) {
	if err := c.Sync(ctx, path); err != nil {
		return nodeState{}, err
	}
	data, st, err := c.GetData(ctx, path)
	if err != nil {
		return nodeState{}, err
	}
	return nodeState{data: data, czxid: st.Czxid, version: st.Version}, nil
}

// reported turns a versioned update's error into what the fuzzer expects of a cancelled
// call (nil or the context's error): an outcome the update reported, which the checker
// judges, is nil unless it carries the context's error.
func reported(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, framework.ErrUnknownOutcome) || errors.Is(err, sharedcount.ErrConflict) {
		return nil
	}
	return err
}

// madeAgainCzxid stands for the czxid of the node the peer made again, until it is read.
const madeAgainCzxid = -1

// trySetRound: the victim's count TrySet from the value it read; madeAgain: the peer
// deletes the node and makes it again (at version 0, like the node read) just before the
// victim's first TrySet, whose cache has most likely not seen that yet.
func trySetRound(ctx context.Context, w *cancelWorld, madeAgain bool) (*opRound, error) {
	path := w.base + "/sct"
	sc, err := sharedcount.New(w.victim, path, 5)
	if err != nil {
		return nil, err
	}
	if err := sc.Start(ctx); err != nil {
		_ = sc.Close()
		return nil, err
	}
	var (
		first = true
		write *versionedWrite // the first call's, checked in after
	)
	return &opRound{
		call: func(ctx context.Context) (func(context.Context) error, error) {
			if !first {
				// The fresh call: from the value the cache holds once it has caught up with
				// the node (its watch tells it of the node made again, or of a write whose
				// outcome was unknown).
				for range 200 {
					if err := w.victim.Sync(ctx, path); err != nil {
						return nil, err
					}
					_, st, err := w.victim.GetData(ctx, path)
					if err != nil {
						return nil, err
					}
					prev, err := sc.Get()
					if err != nil {
						return nil, err
					}
					if prev.Zxid != st.Mzxid {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					return nil, sc.TrySet(ctx, prev, prev.Value+1)
				}
				return nil, errors.New("the count's cache did not catch up with its node")
			}
			first = false
			prev, err := sc.Get()
			if err != nil {
				return nil, err
			}
			bctx := context.WithoutCancel(ctx)
			read, err := readState(bctx, w.peer, path)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(read.data, sharedcount.Encode(prev.Value)) || read.version != prev.Version {
				return nil, fmt.Errorf("the victim's cache (%+v) is not the node (%v) after Start", prev, read)
			}
			before := read
			if madeAgain {
				if err := w.peer.Delete(bctx, path, framework.WithVersion(-1)); err != nil {
					return nil, err
				}
				// The parents are containers: the server may reap them once the node is gone.
				if _, err := w.peer.Create(bctx, path, sharedcount.Encode(0), framework.WithContainerParents()); err != nil {
					return nil, err
				}
				// No read here: the victim's cache hears of the new node a few round
				// trips later, and the TrySet goes now. The new node's czxid is filled in
				// from the node as it is afterwards (nobody makes it again).
				before = nodeState{data: sharedcount.Encode(0), czxid: madeAgainCzxid, version: 0}
			}
			n := prev.Value + 1
			err = sc.TrySet(ctx, prev, n)
			write = &versionedWrite{read: read, before: before, written: sharedcount.Encode(n), err: err}
			w.t.Logf("the first TrySet (node made again: %v) reported: %v", madeAgain, err)
			return nil, reported(err)
		},
		after: func(ctx context.Context) error {
			if write == nil {
				return nil
			}
			now, err := readState(ctx, w.peer, path)
			if err != nil {
				return err
			}
			if write.before.czxid == madeAgainCzxid {
				if now.czxid == write.read.czxid {
					return fmt.Errorf("the node was made again, yet it has the czxid read: %v", now)
				}
				write.before.czxid = now.czxid
			}
			if err := checkVersionedWrite(*write, now); err != nil {
				return fmt.Errorf("TrySet: %w", err)
			}
			return nil
		},
		close: func() { _ = sc.Close() },
	}, nil
}

func init() {
	cancelOps = append(cancelOps,
		cancelOp{name: "sharedcount-tryset", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			return trySetRound(ctx, w, false)
		}},
		cancelOp{name: "sharedcount-tryset-madeagain", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			return trySetRound(ctx, w, true)
		}},
		cancelOp{name: "atomic-increment-checked", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			// The peer makes the counter at 5; nobody else writes it: a reported result
			// is the victim's one increment, on that node.
			path := w.base + "/aic"
			if _, err := w.peer.Create(ctx, path, []byte{0, 0, 0, 5}, framework.WithContainerParents()); err != nil {
				return nil, err
			}
			n, err := atomic.NewInt(w.victim, path)
			if err != nil {
				return nil, err
			}
			var (
				first = true
				write *versionedWrite
				res   atomic.Result[int32]
			)
			return &opRound{
				call: func(ctx context.Context) (func(context.Context) error, error) {
					if !first {
						_, err := n.Increment(ctx)
						return nil, err
					}
					first = false
					before, err := readState(context.WithoutCancel(ctx), w.peer, path)
					if err != nil {
						return nil, err
					}
					res, err = n.Increment(ctx)
					write = &versionedWrite{read: before, before: before, written: []byte{0, 0, 0, 6}, err: err}
					return nil, reported(err)
				},
				after: func(ctx context.Context) error {
					if write == nil {
						return nil
					}
					now, err := readState(ctx, w.peer, path)
					if err != nil {
						return err
					}
					if err := checkVersionedWrite(*write, now); err != nil {
						return fmt.Errorf("increment: %w", err)
					}
					if write.err == nil && (!res.Succeeded || res.Pre != 5 || res.Post != 6) {
						return fmt.Errorf("increment reported success with %+v, not 5 -> 6", res)
					}
					return nil
				},
			}, nil
		}},
	)
}

// Negative controls of checkVersionedWrite: each report that the node contradicts is
// caught, and each that it bears out passes.
func TestVersionedWriteCheckerControls(t *testing.T) {
	read := nodeState{data: []byte{5}, czxid: 0x10, version: 3}
	again := nodeState{data: []byte{0}, czxid: 0x20, version: 3}
	ours := []byte{6}
	applied := nodeState{data: ours, czxid: 0x10, version: 4}
	appliedAgain := nodeState{data: ours, czxid: 0x20, version: 4}
	replaced := fmt.Errorf("sharedcount: set /x: %w", sharedcount.ErrNodeReplaced)
	unknown := fmt.Errorf("set: %w", framework.ErrUnknownOutcome)
	conflict := fmt.Errorf("%w: bad version", sharedcount.ErrConflict)
	same := versionedWrite{read: read, before: read, written: ours}
	madeAgain := versionedWrite{read: read, before: again, written: ours}
	with := func(w versionedWrite, err error) versionedWrite { w.err = err; return w }
	for _, tc := range []struct {
		name string
		w    versionedWrite
		now  nodeState
		bad  bool
	}{
		{"success applied to the node read", same, applied, false},
		{"success on a node made again", madeAgain, appliedAgain, true},
		{"success that wrote nothing", same, read, true},
		{"success that wrote twice", same, nodeState{data: ours, czxid: 0x10, version: 5}, true},
		{"success that wrote other data", same, nodeState{data: []byte{7}, czxid: 0x10, version: 4}, true},
		{"replaced, applied to the new node", with(madeAgain, replaced), appliedAgain, false},
		{"replaced, but the node read has it", with(same, replaced), applied, true},
		{"replaced, but nothing written", with(madeAgain, replaced), again, true},
		{"unknown, not applied", with(same, unknown), read, false},
		{"unknown, applied once", with(same, unknown), applied, false},
		{"unknown, applied twice", with(same, unknown), nodeState{data: ours, czxid: 0x10, version: 5}, true},
		{"conflict, nothing written", with(madeAgain, conflict), again, false},
		{"conflict that wrote", with(madeAgain, conflict), appliedAgain, true},
		{"cancelled before sending, nothing written", with(same, context.Canceled), read, false},
		{"cancelled before sending, yet written", with(same, context.Canceled), applied, true},
	} {
		err := checkVersionedWrite(tc.w, tc.now)
		if tc.bad {
			assert.Error(t, err, tc.name)
		} else {
			assert.NoError(t, err, tc.name)
		}
	}
}
