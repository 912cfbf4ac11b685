package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
)

// barrierSetOp: Set reports success only when the barrier node exists.
func barrierSetOp() xop {
	return xop{name: "barrier-set", setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/barrier"
		b, err := barrier.New(r.w.victim, path)
		if err != nil {
			return nil, err
		}
		return &xround{
			call: b.Set,
			after: func(ctx context.Context, err error) []string {
				if err != nil {
					return nil
				}
				if st := xstat(ctx, r, path); st == nil {
					return []string{"honest: Set returned nil but the barrier node does not exist"}
				}
				return nil
			},
		}, nil
	}}
}

// barrierRemoveOp: Remove (of another client's barrier node, which it may take) reports
// success only when the node is gone.
func barrierRemoveOp() xop {
	return xop{name: "barrier-remove", setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/barrier"
		if _, err := r.advCreate(ctx, path, nil); err != nil {
			return nil, err
		}
		b, err := barrier.New(r.w.victim, path)
		if err != nil {
			return nil, err
		}
		return &xround{
			call: b.Remove,
			after: func(ctx context.Context, err error) []string {
				if err == nil && xstat(ctx, r, path) != nil {
					return []string{"honest: Remove returned nil but the barrier node exists"}
				}
				return nil
			},
			mayTake: func(p string) bool { return p == path },
			target:  func() string { return path },
		}, nil
	}}
}

// barrierWaitOp: Wait on a set barrier, which the adversary removes once the victim
// watches it. Wait passes only when the node is gone on the server, and a barrier the
// victim may not read is waited on all the same (its existence is visible to all).
func barrierWaitOp() xop {
	return xop{name: "barrier-wait", setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/barrier"
		if _, err := r.advCreate(ctx, path, nil); err != nil {
			return nil, err
		}
		b, err := barrier.New(r.w.victim, path)
		if err != nil {
			return nil, err
		}
		returned := make(chan struct{})
		r.background(func() {
			// Remove it once the victim has read it (it watches), or its Wait is over.
			waitFor(r.bg, time.Minute, func() bool {
				select {
				case <-returned:
					return true
				default:
					return r.victimAnswered("getData", path)
				}
			})
			r.forgetAdv(path)
			_ = r.w.adv.Delete(r.bg, path, framework.Quietly())
		})
		return &xround{
			call: func(ctx context.Context) error {
				defer close(returned)
				return b.Wait(ctx)
			},
			after: func(ctx context.Context, err error) []string {
				switch {
				case errors.Is(err, framework.ErrNoAuth):
					return []string{fmt.Sprintf("honest: Wait failed on a barrier node the victim may not read (it may see that it exists): %v", err)}
				case err == nil && xstat(ctx, r, path) != nil:
					return []string{"honest: Wait returned nil while the barrier node exists on the server"}
				}
				return nil
			},
			target: func() string { return path },
		}, nil
	}}
}

// victimSent reports whether a victim's request op on path was answered, with or
// without error.
func (r *xrun) victimSent(op, path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.victimOps, func(o xreq) bool { return o.Op == op && o.Path == path })
}

// victimAnswered reports whether a victim's request op on path was answered without error.
func (r *xrun) victimAnswered(op, path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.victimOps, func(o xreq) bool {
		return o.Op == op && o.Path == path && o.Err == nil
	})
}

// doubleBarrierOp: the victim enters and leaves a double barrier of 2 with a peer member
// on the adversary's client (which enters, then leaves). Checks: the victim is never in
// alone (when its Enter returns nil, the peer's node exists or the peer entered); a
// failed Enter leaves no member node of the victim; Leave returns nil only when the
// peer's node is gone; Leave never fails on a peer's node it may not read.
//
// private: the peer's client makes its nodes readable by itself only (as a service with
// its own ACLs would): the victim may see them, not read them.
func doubleBarrierOp(name string, private bool) xop {
	return xop{name: name, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/dbarrier"
		if _, err := r.advCreate(ctx, path, nil); err != nil {
			return nil, err
		}
		victim, err := doublebarrier.New(r.w.victim, path, 2)
		if err != nil {
			return nil, err
		}
		pc := r.w.adv
		if private {
			pc = connect(r.t, ens.Addr(r.w.member), otherSession,
				framework.WithAuth("digest", []byte("adversary:secret")), framework.WithACL(advACL))
		}
		// The peer sorts last (the highest member), and leaves only once the victim's
		// Leave has looked at its node (or is over): the victim, the lowest, watches the
		// peer's node while it is there, in every run.
		var peer *doublebarrier.DoubleBarrier
		for peer == nil || peer.Node() < victim.Node() {
			if peer, err = doublebarrier.New(pc, path, 2); err != nil {
				return nil, err
			}
		}
		pnode, vnode, ready := peer.Node(), victim.Node(), path+"/ready"
		var peerIn, readyWhileIn atomic.Bool
		left := make(chan struct{})    // the victim's Leave returned, or its Enter failed
		leaving := make(chan struct{}) // the victim's Leave started
		peerCtx, stopPeer := context.WithTimeout(r.bg, 15*time.Second)
		started := make(chan struct{})
		r.background(func() {
			defer stopPeer()
			go func() {
				// The peer's node is another client's: record it once it is there.
				waitFor(peerCtx, 30*time.Second, func() bool { return xstatAdv(peerCtx, r, pnode) != nil })
				if st := xstatAdv(peerCtx, r, pnode); st != nil {
					r.recordAdv(pnode, st)
				}
				close(started)
			}()
			if peer.Enter(peerCtx) != nil {
				r.forgetAdv(pnode)
				return
			}
			peerIn.Store(true)
			// The peer leaves once the victim's Leave has looked at the members (its
			// listing after it started), or has returned.
			waitFor(peerCtx, time.Minute, func() bool {
				select {
				case <-left:
					return true
				case <-leaving:
					return r.victimSent("getChildren", path) || r.victimSent("getData", pnode)
				default:
					return r.clientClosed.Load()
				}
			})
			r.forgetAdv(pnode)
			_ = peer.Leave(peerCtx)
		})
		// Watch ready (by polling: no watch left): when it goes while the peer's node is
		// still there, someone deleted it while the peer was in (the peer's node goes
		// before its round's ready, and never comes back).
		r.background(func() {
			seen := false
			for peerCtx.Err() == nil {
				st := xstatAdv(peerCtx, r, ready)
				if st == nil && seen && xstatAdv(peerCtx, r, pnode) != nil {
					readyWhileIn.Store(true)
				}
				if st == nil && seen {
					return
				}
				seen = seen || st != nil
				select {
				case <-time.After(20 * time.Millisecond):
				case <-peerCtx.Done():
				}
			}
		})
		select {
		case <-started:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		entered := false
		var enterErr error
		return &xround{
			call: func(ctx context.Context) error {
				vnode = victim.Node()
				if err := victim.Enter(ctx); err != nil {
					enterErr = err
					close(left)
					stopPeer() // it would wait for nobody
					return err
				}
				entered = true
				// In: the peer is in too, or about to be (its node is there).
				if xstatAdv(r.bg, r, pnode) == nil && !peerIn.Load() { // (ctx may have ended)
					r.violate("exclusion: the victim's Enter returned nil while the peer member is not there and did not enter")
				}
				return nil
			},
			undo: func(ctx context.Context) error {
				close(leaving)
				err := victim.Leave(ctx)
				close(left)
				if errors.Is(err, framework.ErrNoAuth) {
					r.violate("honest: Leave failed on a node it may not read: %v", err)
				}
				if err == nil && xstat(r.bg, r, pnode) != nil {
					r.violate("honest: the victim's Leave returned nil while the peer member's node is still there")
				}
				return err
			},
			final: func(ctx context.Context) []string {
				var out []string
				if readyWhileIn.Load() && (r.victimAnswered("multi", "") || r.victimAnswered("delete", ready)) {
					out = append(out, fmt.Sprintf("exclusion: the victim deleted %s while the peer member's node was there (the peer in)", ready))
				}
				// (An Enter that could not withdraw its node says so: ErrUnknownOutcome.)
				if !entered && !errors.Is(enterErr, framework.ErrUnknownOutcome) && xstatAdv(ctx, r, vnode) != nil {
					out = append(out, fmt.Sprintf("cleanliness: Enter failed but the victim's member node %s is there", vnode))
				}
				return out
			},
			// The last leaver takes the round's ready, whoever made it (nobody makes
			// another while a member node is there); the peer-in check covers the rest.
			mayTake: func(p string) bool { return p == ready },
		}, nil
	}}
}

// xstat syncs the adversary's server and reads p's Stat (nil: no node, or unreadable).
func xstat(ctx context.Context, r *xrun, p string) *framework.Stat {
	if err := r.w.adv.Sync(ctx, p); err != nil {
		return nil
	}
	return xstatAdv(ctx, r, p)
}

// xstatAdv reads p's Stat as the adversary (nil: no node).
func xstatAdv(ctx context.Context, r *xrun, p string) *framework.Stat {
	st, err := r.w.adv.Exists(ctx, p)
	if err != nil {
		return nil
	}
	return st
}

// xbarrierOps are the barrier operations.
var xbarrierOps = []xop{
	barrierSetOp(),
	barrierRemoveOp(),
	barrierWaitOp(),
	doubleBarrierOp("doublebarrier", false),
	doubleBarrierOp("doublebarrier-private-peer", true),
}
