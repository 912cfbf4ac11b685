package reliability_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
)

// released adapts a lease's Release to an undo.
func released[L interface{ Release(context.Context) error }](l L, err error) (func(context.Context) error, error) {
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// cancelOps are the blocking calls the cancellation fuzzer exercises.
var cancelOps = []cancelOp{
	{name: "create-protected", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		parent := w.base + "/f"
		mine, err := w.peer.Create(ctx, parent+"/n-", nil, framework.WithParents(), framework.WithProtection(),
			framework.WithMode(framework.EphemeralSequential))
		if err != nil {
			return nil, err
		}
		return &opRound{sentinels: []string{mine},
			call: func(ctx context.Context) (func(context.Context) error, error) {
				p, err := w.victim.Create(ctx, parent+"/n-", []byte("v"), framework.WithParents(), framework.WithProtection(),
					framework.WithMode(framework.EphemeralSequential))
				if err != nil {
					return nil, err
				}
				return func(ctx context.Context) error { return w.victim.Delete(ctx, p, framework.Guaranteed()) }, nil
			}}, nil
	}},
	{name: "create-idempotent", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		p := w.base + "/p/node"
		return &opRound{
			call: func(ctx context.Context) (func(context.Context) error, error) {
				_, err := w.victim.Create(ctx, p, []byte("v"), framework.WithParents(), framework.Idempotent())
				return nil, err
			},
			after: func(ctx context.Context) error {
				// A cancelled create's outcome is unknown: either way the node is whole.
				b, st, err := w.peer.GetData(ctx, p)
				if errors.Is(err, framework.ErrNoNode) {
					return nil
				}
				if err == nil && (string(b) != "v" || st == nil) {
					err = fmt.Errorf("%s holds %q", p, b)
				}
				return err
			}}, nil
	}},
	{name: "delete-guaranteed", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		p := w.base + "/d/x"
		other, err := w.peer.Create(ctx, w.base+"/d/y", nil, framework.WithParents())
		if err != nil {
			return nil, err
		}
		if _, err := w.peer.Create(ctx, p, nil); err != nil {
			return nil, err
		}
		return &opRound{sentinels: []string{other},
			call: func(ctx context.Context) (func(context.Context) error, error) {
				return nil, w.victim.Delete(ctx, p, framework.Guaranteed())
			},
			after: func(ctx context.Context) error {
				// Guaranteed: once the background deletes are done, the node is gone.
				st, err := w.peer.Exists(ctx, p)
				if err == nil && st != nil {
					err = fmt.Errorf("%s still exists after a guaranteed delete", p)
				}
				return err
			},
			unblock: func(ctx context.Context) error {
				_, err := w.peer.Create(ctx, p, nil) // for the next call
				return err
			}}, nil
	}},
	{name: "getdata-watch", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		p := w.base + "/g"
		if _, err := w.peer.Create(ctx, p, []byte("x"), framework.WithParents()); err != nil {
			return nil, err
		}
		return &opRound{call: func(ctx context.Context) (func(context.Context) error, error) {
			_, _, _, err := w.victim.GetDataW(ctx, p)
			return nil, err
		}}, nil
	}},
	{name: "children-watch", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		p := w.base + "/c"
		if _, err := w.peer.Create(ctx, p+"/a", nil, framework.WithParents()); err != nil {
			return nil, err
		}
		return &opRound{call: func(ctx context.Context) (func(context.Context) error, error) {
			_, _, _, err := w.victim.ChildrenW(ctx, p)
			return nil, err
		}}, nil
	}},
	{name: "transaction", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		p := w.base + "/t"
		if _, err := w.peer.Create(ctx, p, nil, framework.WithParents()); err != nil {
			return nil, err
		}
		a, b := p+"/a", p+"/b"
		return &opRound{
			call: func(ctx context.Context) (func(context.Context) error, error) {
				_, err := w.victim.Transaction(ctx, framework.CreateOp(a, nil, framework.Persistent, nil),
					framework.CreateOp(b, nil, framework.Persistent, nil))
				if err != nil {
					return nil, err
				}
				return func(ctx context.Context) error {
					_, err := w.victim.Transaction(ctx, framework.DeleteOp(a, -1), framework.DeleteOp(b, -1))
					return err
				}, nil
			},
			after: func(ctx context.Context) error {
				// One read (a late transaction may be applied any time): both or neither.
				kids, _, err := w.peer.Children(ctx, p)
				if err == nil && len(kids) == 1 {
					err = fmt.Errorf("a transaction applied in part: %s holds %v", p, kids)
				}
				return err
			},
			unblock: func(ctx context.Context) error {
				// A late transaction's nodes stay (outcome unknown): clear them for the next call.
				if err := w.peer.Delete(ctx, a, framework.Quietly()); err != nil {
					return err
				}
				return w.peer.Delete(ctx, b, framework.Quietly())
			}}, nil
	}},
	{name: "mutex", blocks: true, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		return lockRound(ctx, w, func(c *framework.Client) (acquirer, error) {
			m, err := mutex.New(c, w.base+"/m")
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) (func(context.Context) error, string, error) {
				l, err := m.Acquire(ctx)
				if err != nil {
					return nil, "", err
				}
				return l.Release, l.Node(), nil
			}, nil
		}, nil)
	}},
	{name: "mutex-free", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		m, err := mutex.New(w.victim, w.base+"/mf")
		if err != nil {
			return nil, err
		}
		return &opRound{call: func(ctx context.Context) (func(context.Context) error, error) { return released(m.Acquire(ctx)) }}, nil
	}},
	{name: "semaphore", blocks: true, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		return semaphoreRound(ctx, w, func(c *framework.Client) (*semaphore.Semaphore, error) {
			return semaphore.New(c, w.base+"/s", 2)
		}, 2)
	}},
	{name: "semaphore-shared", blocks: true, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		return semaphoreRound(ctx, w, func(c *framework.Client) (*semaphore.Semaphore, error) {
			return semaphore.NewShared(c, w.base+"/ss", w.base+"/ssc", 1)
		}, 1)
	}},
	{name: "rwlock-write", blocks: true, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		return rwRound(ctx, w, true)
	}},
	{name: "rwlock-read", blocks: true, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		return rwRound(ctx, w, false)
	}},
	{name: "multilock", blocks: true, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		// The peer holds the second lock: the victim takes the first and waits for it.
		return lockRound(ctx, w, func(c *framework.Client) (acquirer, error) {
			m, err := mutex.New(c, w.base+"/mb")
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) (func(context.Context) error, string, error) {
				l, err := m.Acquire(ctx)
				if err != nil {
					return nil, "", err
				}
				return l.Release, l.Node(), nil
			}, nil
		}, func(c *framework.Client) (acquirer, error) {
			ml, err := multilock.NewFromPaths(c, w.base+"/ma", w.base+"/mb")
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) (func(context.Context) error, string, error) {
				l, err := ml.Acquire(ctx)
				if err != nil {
					return nil, "", err
				}
				return l.Release, "", nil
			}, nil
		})
	}},
	{name: "barrier-wait", blocks: true, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		pb, err := barrier.New(w.peer, w.base+"/b")
		if err != nil {
			return nil, err
		}
		if err := pb.Set(ctx); err != nil {
			return nil, err
		}
		vb, err := barrier.New(w.victim, w.base+"/b")
		if err != nil {
			return nil, err
		}
		return &opRound{sentinels: []string{w.base + "/b"},
			call:    func(ctx context.Context) (func(context.Context) error, error) { return nil, vb.Wait(ctx) },
			unblock: pb.Remove}, nil
	}},
	{name: "barrier-set", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		vb, err := barrier.New(w.victim, w.base+"/bs")
		if err != nil {
			return nil, err
		}
		return &opRound{call: func(ctx context.Context) (func(context.Context) error, error) {
			if err := vb.Set(ctx); err != nil {
				return nil, err
			}
			return vb.Remove, nil
		}}, nil
	}},
	{name: "doublebarrier-enter", blocks: true, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		vd, err := doublebarrier.New(w.victim, w.base+"/db", 2)
		if err != nil {
			return nil, err
		}
		pd, err := doublebarrier.New(w.peer, w.base+"/db", 2)
		if err != nil {
			return nil, err
		}
		peerDone := make(chan error, 1)
		return &opRound{
			call: func(ctx context.Context) (func(context.Context) error, error) {
				if err := vd.Enter(ctx); err != nil {
					return nil, err
				}
				return vd.Leave, nil
			},
			unblock: func(ctx context.Context) error {
				// The peer enters and leaves with the victim's next call.
				go func() {
					err := pd.Enter(ctx)
					if err == nil {
						err = pd.Leave(ctx)
					}
					peerDone <- err
				}()
				return nil
			},
			check: func(ctx context.Context) error {
				select {
				case err := <-peerDone:
					return err
				case <-ctx.Done():
					return ctx.Err()
				}
			}}, nil
	}},
	{name: "latch-await", blocks: true, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		pl, err := leader.NewLatch(w.peer, w.base+"/l", "peer")
		if err != nil {
			return nil, err
		}
		if err := pl.Start(ctx); err != nil {
			return nil, err
		}
		if err := pl.Await(ctx); err != nil {
			_ = pl.Close()
			return nil, err
		}
		vl, err := leader.NewLatch(w.victim, w.base+"/l", "victim")
		if err != nil {
			_ = pl.Close()
			return nil, err
		}
		if err := vl.Start(ctx); err != nil {
			_ = pl.Close()
			return nil, err
		}
		return &opRound{sentinels: []string{pl.Node()},
			call:    func(ctx context.Context) (func(context.Context) error, error) { return nil, vl.Await(ctx) },
			unblock: func(context.Context) error { return pl.Close() },
			close:   func() { _ = vl.Close(); _ = pl.Close() }}, nil
	}},
	{name: "latch-start", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		return &opRound{call: func(ctx context.Context) (func(context.Context) error, error) {
			l, err := leader.NewLatch(w.victim, w.base+"/ls", "victim")
			if err != nil {
				return nil, err
			}
			if err := l.Start(ctx); err != nil {
				_ = l.Close()
				return nil, err
			}
			return func(context.Context) error { return l.Close() }, nil
		}}, nil
	}},
	{name: "selector-start", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		return &opRound{call: func(ctx context.Context) (func(context.Context) error, error) {
			s, err := leader.NewSelector(w.victim, w.base+"/sel", "victim", func(fctx context.Context) error {
				<-fctx.Done() // leads until Close
				return nil
			})
			if err != nil {
				return nil, err
			}
			if err := s.Start(ctx); err != nil {
				_ = s.Close()
				return nil, err
			}
			return func(context.Context) error { return s.Close() }, nil
		}}, nil
	}},
	{name: "sharedcount", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		sc, err := sharedcount.New(w.victim, w.base+"/sc", 0)
		if err != nil {
			return nil, err
		}
		if err := sc.Start(ctx); err != nil {
			_ = sc.Close()
			return nil, err
		}
		return &opRound{call: func(ctx context.Context) (func(context.Context) error, error) {
			return nil, sc.Set(ctx, 7)
		}, close: func() { _ = sc.Close() }}, nil
	}},
	{name: "sharedcount-start", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		return &opRound{call: func(ctx context.Context) (func(context.Context) error, error) {
			sc, err := sharedcount.New(w.victim, w.base+"/scs", 3)
			if err != nil {
				return nil, err
			}
			if err := sc.Start(ctx); err != nil {
				_ = sc.Close()
				return nil, err
			}
			return func(context.Context) error { return sc.Close() }, nil
		}}, nil
	}},
	{name: "atomic-increment", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
		n, err := atomic.NewInt(w.victim, w.base+"/ai")
		if err != nil {
			return nil, err
		}
		return &opRound{call: func(ctx context.Context) (func(context.Context) error, error) {
			_, err := n.Increment(ctx)
			return nil, err
		}}, nil
	}},
}

// acquirer is a lock's acquire: it returns the release, the lease's node and the error.
type acquirer func(ctx context.Context) (func(context.Context) error, string, error)

// lockRound sets up a lock the peer holds (made by peerLock) and the victim's acquire (made
// by victimLock, or by peerLock when nil): the victim's call waits until unblock releases
// the peer's lease.
func lockRound(ctx context.Context, w *cancelWorld, peerLock, victimLock func(*framework.Client) (acquirer, error)) (*opRound, error) {
	if victimLock == nil {
		victimLock = peerLock
	}
	pa, err := peerLock(w.peer)
	if err != nil {
		return nil, err
	}
	va, err := victimLock(w.victim)
	if err != nil {
		return nil, err
	}
	release, node, err := pa(ctx)
	if err != nil {
		return nil, err
	}
	return &opRound{sentinels: []string{node},
		call: func(ctx context.Context) (func(context.Context) error, error) {
			release, _, err := va(ctx)
			return release, err
		},
		unblock: release}, nil
}

// semaphoreRound: the peer holds every lease (n) of a semaphore; the victim waits for one.
func semaphoreRound(ctx context.Context, w *cancelWorld, mk func(*framework.Client) (*semaphore.Semaphore, error), n int) (*opRound, error) {
	ps, err := mk(w.peer)
	if err != nil {
		return nil, err
	}
	vs, err := mk(w.victim)
	if err != nil {
		return nil, err
	}
	held, err := ps.AcquireN(ctx, n)
	if err != nil {
		return nil, err
	}
	var nodes []string
	for _, l := range held {
		nodes = append(nodes, l.Node())
	}
	return &opRound{sentinels: nodes,
		call:    func(ctx context.Context) (func(context.Context) error, error) { return released(vs.Acquire(ctx)) },
		unblock: func(ctx context.Context) error { return semaphore.ReturnAll(ctx, held...) }}, nil
}

// rwRound: the peer holds the read lock and the victim wants the write lock, or the
// other way round.
func rwRound(ctx context.Context, w *cancelWorld, victimWrites bool) (*opRound, error) {
	side := func(rw *rwlock.RWLock, write bool) *rwlock.Lock {
		if write {
			return rw.WriteLock()
		}
		return rw.ReadLock()
	}
	prw, err := rwlock.New(w.peer, w.base+"/rw")
	if err != nil {
		return nil, err
	}
	vrw, err := rwlock.New(w.victim, w.base+"/rw")
	if err != nil {
		return nil, err
	}
	pl, err := side(prw, !victimWrites).Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &opRound{sentinels: []string{pl.Node()},
		call: func(ctx context.Context) (func(context.Context) error, error) {
			return released(side(vrw, victimWrites).Acquire(ctx))
		},
		unblock: pl.Release}, nil
}
