package reliability_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/retry"
)

// xback bounds how long a node kept in place (persistent node, member) may take to be
// back after a move, and a listener to hear the last change.
const xback = 15 * time.Second

// xread syncs the adversary's server and reads p: its data (nil when unreadable) and
// Stat (nil: no node).
func xread(ctx context.Context, r *xrun, p string) ([]byte, *framework.Stat) {
	if r.w.adv.Sync(ctx, p) != nil {
		return nil, nil
	}
	b, st, err := r.w.adv.GetData(ctx, p)
	if err != nil {
		return nil, xstatAdv(ctx, r, p)
	}
	return b, st
}

// victimWrites counts the victim's creates and setData on path that the server answered
// with success: writes certainly applied.
func (r *xrun) victimWrites(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, o := range r.victimOps {
		if (o.Op == "create" || o.Op == "setData") && o.Path == path && o.Err == nil {
			n++
		}
	}
	return n
}

// unknownOutcome reports whether err leaves a write's outcome open: said so, the caller's
// context ended, the client closed, or a connection-class error.
func unknownOutcome(err error) bool {
	return errors.Is(err, framework.ErrUnknownOutcome) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, framework.ErrClosed) || retry.IsRetryable(err, false)
}

// checkApplied: a change reported succeeded was applied exactly once; one reported not
// succeeded (nil error), or failed with an error that does not leave the outcome open,
// was not applied.
func checkApplied(r *xrun, path string, succeeded bool, err error) []string {
	w := r.victimWrites(path)
	switch {
	case succeeded && w != 1:
		return []string{fmt.Sprintf("honest: the change succeeded but the victim's writes to %s applied: %d", path, w)}
	case !succeeded && err == nil && w > 0:
		return []string{fmt.Sprintf("honest: the change did not succeed (nil error) but %d of its writes were applied", w)}
	case err != nil && !unknownOutcome(err) && w > 0:
		return []string{fmt.Sprintf("honest: the change failed (%v), not an unknown outcome, but %d of its writes were applied", err, w)}
	}
	return nil
}

// counterOp is one change of a counter at <base>/counter, made by another client with
// init first (nil: no node; empty: a node with no data). do returns the result; post is
// the counter's value a success must leave (nil: not checked). cas: the change is a
// CompareAndSet expecting *cas: refusing it on a counter that holds *cas (its data read
// as Get reads it) that nobody changed is a violation.
func counterOp(name string, init []byte, do func(c *atomic.Long, ctx context.Context) (atomic.Result[int64], error),
	post func(pre int64) int64, cas *int64) xop {
	return xop{name: name, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/counter"
		var mzxid int64
		if init != nil {
			if _, err := r.advCreate(ctx, path, init); err != nil {
				return nil, err
			}
			mzxid = mustStat(ctx, r, path).Mzxid
		}
		c, err := atomic.NewLong(r.w.victim, path)
		if err != nil {
			return nil, err
		}
		var res atomic.Result[int64]
		return &xround{
			call: func(ctx context.Context) (err error) {
				res, err = do(c, ctx)
				return err
			},
			after: func(ctx context.Context, err error) []string {
				out := checkApplied(r, path, res.Succeeded, err)
				data, st := xread(ctx, r, path)
				if res.Succeeded && post != nil && res.Post != post(res.Pre) {
					out = append(out, fmt.Sprintf("honest: succeeded with Pre %d Post %d", res.Pre, res.Post))
				}
				if res.Succeeded && !r.move.other && (st == nil || !bytes.Equal(data, atomicLong(res.Post))) {
					out = append(out, fmt.Sprintf("honest: succeeded with Post %d but the server holds %x", res.Post, data))
				}
				if cas != nil && !res.Succeeded && err == nil && st != nil && st.Mzxid == mzxid &&
					(len(data) == 0 || bytes.Equal(data, atomicLong(*cas))) {
					out = append(out, fmt.Sprintf("honest: CompareAndSet expecting %d refused (nil error) a counter holding %x (Get reads %d) that nobody changed", *cas, data, *cas))
				}
				return out
			},
			target: func() string { return path },
			// A change of a counter another client deleted makes it again: the counter's
			// path is the operation's to make (a counter never deletes).
			mayTake: func(p string) bool { return p == path },
		}, nil
	}}
}

func atomicLong(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// xcountOp: a shared count started at 0; TrySet(prev, 1). A success was applied to the
// node prev was read from; a listener hears the count the server holds in the end
// (every change, also one that brings the bytes back).
func xcountOp() xop {
	return xop{name: "sharedcount-tryset", listeners: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/count"
		c, err := sharedcount.New(r.w.victim, path, 0)
		if err != nil {
			return nil, err
		}
		var mu sync.Mutex
		var heard sharedcount.Versioned[int32] // what the listener was told last
		c.AddListener(func(v sharedcount.Versioned[int32], err error) {
			r.listenerHook()
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				heard = v
			}
		})
		if err := c.Start(ctx); err != nil {
			return nil, err
		}
		prev, err := c.Get()
		if err != nil {
			return nil, err
		}
		mu.Lock()
		heard = prev
		mu.Unlock()
		czxid := mustStat(ctx, r, path).Czxid
		var first, returned int // the request index of TrySet's write; requests sent when it returned
		closeOnce := onceErr(c.Close)
		// heardAll: the listener hears every change: what it was told last is what the
		// server holds (also after a change that brings the bytes back).
		heardAll := func() []string {
			if r.move.listener || r.move.name == "unreadable" || r.closedEarly.Load() || r.k > returned && !r.move.other {
				return nil // not told, told nothing it may read, or held by a move after the call
			}
			var data []byte
			var st *framework.Stat
			var last sharedcount.Versioned[int32]
			ok := waitFor(r.bg, xback, func() bool {
				data, st = xread(r.bg, r, path)
				mu.Lock()
				last = heard
				mu.Unlock()
				return st != nil && st.Mzxid == last.Zxid
			})
			if !ok && st != nil {
				got, err := c.Get()
				return []string{fmt.Sprintf("listener: told %d (mzxid 0x%x) last, the server holds %x (mzxid 0x%x) %v later (Get: %d, mzxid 0x%x, %v)",
					last.Value, last.Zxid, data, st.Mzxid, xback, got.Value, got.Zxid, err)}
			}
			return nil
		}
		return &xround{
			call: func(ctx context.Context) error {
				first = r.requests() + 1
				defer func() { returned = r.requests() }()
				return c.TrySet(ctx, prev, 1)
			},
			after: func(ctx context.Context, err error) []string {
				out := heardAll()
				if err != nil || r.move.other && r.k > first {
					return out // a later move may change the node after the write
				}
				data, st := xread(ctx, r, path)
				if st == nil || st.Czxid != czxid || !bytes.Equal(data, sharedcount.Encode(1)) {
					out = append(out, fmt.Sprintf("honest: TrySet succeeded but the server holds %x (%v), czxid read 0x%x", data, xczxid(st), czxid))
				}
				return out
			},
			close: closeOnce,
		}, nil
	}}
}

func xczxid(st *framework.Stat) string {
	if st == nil {
		return "no node"
	}
	return fmt.Sprintf("czxid 0x%x", st.Czxid)
}

// xkept is a recipe that keeps a node in place: a persistent node, a TTL node, a member.
type xkept struct {
	start  func(ctx context.Context) error
	wait   func(ctx context.Context) error
	actual func() string
	child  string // a node it keeps under its node (a TTL node's touched child); "" none
	close  func() error
	listen func(fn func())
	final  func(ctx context.Context) []string // nil: none
	// shared: another instance at the same path may write its data into the node (as
	// Curator's does): any data will do.
	shared bool
}

// keptOp starts a kept node and waits for its first creation. Once it says so the node
// is there, with its data, and is back after another client deleted it (or stays
// another client's, which it never takes over); Close deletes only its own node (the
// ownership check).
func keptOp(name string, data []byte, mk func(r *xrun, path string) (xkept, error)) xop {
	return xop{name: name, listeners: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		k, err := mk(r, r.w.base+"/kept")
		if err != nil {
			return nil, err
		}
		k.listen(r.listenerHook)
		closeOnce := onceErr(k.close)
		returned := 0 // requests sent when the call returned
		return &xround{
			call: func(ctx context.Context) error {
				defer func() { returned = r.requests() }()
				if err := k.start(ctx); err != nil {
					return err
				}
				return k.wait(ctx)
			},
			after: func(ctx context.Context, err error) []string {
				// A move on the wire or by the caller after the call returned (at a
				// request the recipe sends in the background) holds or ends what the
				// check needs: the check is for the moves of the call, and for another
				// client's at any time.
				if err != nil || r.closedEarly.Load() || r.k > returned && !r.move.other {
					return nil
				}
				var p string
				var got []byte
				var st, cst *framework.Stat
				ok := waitFor(ctx, xback, func() bool {
					p = k.actual()
					got, st = xread(ctx, r, p)
					r.mu.Lock()
					adv := r.advNodes[p]
					r.mu.Unlock()
					if st == nil || (adv != st.Czxid && !k.shared && !bytes.Equal(got, data)) {
						return false
					}
					if k.child != "" && adv != st.Czxid { // (no child under another's node)
						_, cst = xread(ctx, r, k.child)
						return cst != nil
					}
					return true
				})
				switch {
				case !ok && k.child != "" && st != nil:
					return []string{fmt.Sprintf("honest: started, but the child %s it keeps is not there %v later", k.child, xback)}
				case !ok:
					return []string{fmt.Sprintf("honest: started, but its node %q is not there with its data %q %v later (%q, %v)",
						p, data, xback, got, xczxid(st))}
				}
				return nil
			},
			close: closeOnce,
			final: k.final,
			target: func() string {
				return k.actual()
			},
		}, nil
	}}
}

func pnodeKept(opts ...persistentnode.Option) func(r *xrun, path string) (xkept, error) {
	return func(r *xrun, path string) (xkept, error) {
		n, err := persistentnode.New(r.w.victim, path, []byte("kept"), opts...)
		if err != nil {
			return xkept{}, err
		}
		return xkept{start: func(context.Context) error { return n.Start() }, wait: n.WaitForInitialCreate,
			actual: n.ActualPath, close: n.Close,
			listen: func(fn func()) { n.AddListener(func(persistentnode.Created) { fn() }) }}, nil
	}
}

func ttlKept(ttl time.Duration) func(r *xrun, path string) (xkept, error) {
	return func(r *xrun, path string) (xkept, error) {
		n, err := persistentnode.NewTTL(r.w.victim, path, ttl, []byte("kept"))
		if err != nil {
			return xkept{}, err
		}
		return xkept{start: func(context.Context) error { return n.Start() }, wait: n.WaitForInitialCreate,
			actual: n.ActualPath, child: n.ChildPath(), close: n.Close,
			listen: func(fn func()) { n.AddListener(func(persistentnode.Created) { fn() }) }}, nil
	}
}

func memberKept(r *xrun, path string) (xkept, error) {
	m, err := groupmember.New(r.w.victim, path, "m1", []byte("kept"))
	if err != nil {
		return xkept{}, err
	}
	return xkept{start: m.Start, wait: m.WaitForInitialCreate,
		actual: func() string { return framework.JoinPath(path, "m1") }, close: m.Close,
		listen: func(fn func()) { m.AddListener(func(cache.Event) { fn() }) }}, nil
}

// contendedMemberKept: once the victim's member node is there, another process runs a
// member of the same id (it waits while the victim's node is there, and makes its own
// once it is gone). Its node is another client's: the victim neither takes it for its
// own nor deletes it at Close.
func contendedMemberKept(r *xrun, path string) (xkept, error) {
	k, err := memberKept(r, path)
	if err != nil {
		return k, err
	}
	other, err := groupmember.New(r.w.adv, path, "m1", []byte("other member"))
	if err != nil {
		return k, err
	}
	k.shared = true
	node := framework.JoinPath(path, "m1")
	octx, stop := context.WithCancel(r.bg)
	called := make(chan struct{})
	var made sync.WaitGroup
	r.background(func() {
		// The victim's node is there (or its call is over without one).
		waitFor(octx, time.Minute, func() bool {
			if st := xstatAdv(octx, r, node); st != nil && st.EphemeralOwner != r.w.adv.SessionID() {
				return true
			}
			select {
			case <-called:
				return true
			default:
				return false
			}
		})
		if other.Start(octx) != nil {
			return
		}
		made.Add(1)
		go func() {
			defer made.Done()
			if other.WaitForInitialCreate(octx) != nil {
				return
			}
			if st := xstatAdv(octx, r, node); st != nil && st.EphemeralOwner == r.w.adv.SessionID() {
				r.recordAdv(node, st)
			}
		}()
	})
	start, wait := k.start, k.wait
	k.start = func(ctx context.Context) error {
		err := start(ctx)
		if err != nil {
			close(called)
		}
		return err
	}
	k.wait = func(ctx context.Context) error {
		defer close(called)
		return wait(ctx)
	}
	k.final = func(ctx context.Context) []string {
		stop()
		made.Wait()
		r.mu.Lock()
		czxid, ok := r.advNodes[node]
		r.mu.Unlock()
		var out []string
		if st := xstatAdv(ctx, r, node); ok && (st == nil || st.Czxid != czxid) {
			out = append(out, fmt.Sprintf("ownership: the other process's member node %s (czxid 0x%x) was deleted or replaced (%v)", node, czxid, xczxid(st)))
		}
		r.forgetAdv(node)
		_ = other.Close()
		return out
	}
	return k, nil
}

// xvalueOps are the value and node-keeping operations.
var xvalueOps = slices.Concat([]xop{
	xcountOp(),
	counterOp("atomic-increment", atomicLong(5), (*atomic.Long).Increment, func(p int64) int64 { return p + 1 }, nil),
	counterOp("atomic-increment-missing", nil, (*atomic.Long).Increment, func(p int64) int64 { return p + 1 }, nil),
	counterOp("atomic-cas", atomicLong(0), func(c *atomic.Long, ctx context.Context) (atomic.Result[int64], error) {
		return c.CompareAndSet(ctx, 0, 7)
	}, func(int64) int64 { return 7 }, new(int64)),
	counterOp("atomic-cas-empty", []byte{}, func(c *atomic.Long, ctx context.Context) (atomic.Result[int64], error) {
		return c.CompareAndSet(ctx, 0, 7)
	}, func(int64) int64 { return 7 }, new(int64)),
	counterOp("atomic-initialize", nil, func(c *atomic.Long, ctx context.Context) (atomic.Result[int64], error) {
		ok, err := c.Initialize(ctx, 3)
		return atomic.Result[int64]{Succeeded: ok, Post: 3}, err
	}, nil, nil),
	counterOp("atomic-forceset", atomicLong(5), func(c *atomic.Long, ctx context.Context) (atomic.Result[int64], error) {
		err := c.ForceSet(ctx, 9)
		return atomic.Result[int64]{Succeeded: err == nil, Post: 9}, err
	}, nil, nil),
	keptOp("pnode", []byte("kept"), pnodeKept()),
	keptOp("pnode-protected-seq", []byte("kept"), pnodeKept(persistentnode.WithMode(framework.EphemeralSequential), persistentnode.WithProtection())),
	keptOp("pnode-ttl", []byte("kept"), ttlKept(10*time.Second)),
	keptOp("groupmember", []byte("kept"), memberKept),
	keptOp("groupmember-contended", []byte("kept"), contendedMemberKept),
})
