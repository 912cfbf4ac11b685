package reliability_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
)

// xlease is what the lock operations need of a lease.
type xlease interface {
	Done() <-chan struct{}
	Release(ctx context.Context) error
}

// xlocker makes a lock of one kind on a client: acquire blocks, try does not.
type xlocker func(c *framework.Client, path string) (acquire, try func(context.Context) (xlease, error), err error)

func asLease[L xlease](l L, err error) (xlease, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}

// lockOp is acquire-then-release of one lock kind. Its checks: a lease reported held has
// its node on the server (or learns of its loss within xLoss), and a contender on another
// client does not get in while the lease is live (exclusion).
func lockOp(name string, mk xlocker) xop {
	return xop{name: name, contends: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/lock"
		acquire, _, err := mk(r.w.victim, path)
		if err != nil {
			return nil, err
		}
		_, try, err := mk(r.w.adv, path)
		if err != nil {
			return nil, err
		}
		var lease xlease
		return &xround{
			call: func(ctx context.Context) (err error) {
				lease, err = acquire(ctx)
				return err
			},
			after: func(ctx context.Context, err error) []string {
				if err != nil {
					return nil
				}
				return checkExclusive(ctx, r, lease.Done(), try)
			},
			undo:    func(ctx context.Context) error { return lease.Release(ctx) },
			contend: lockContender(mk, path),
		}, nil
	}}
}

// lockContender takes the lock on another client and holds it until released.
func lockContender(mk xlocker, path string) func(ctx context.Context, c *framework.Client) (func(), error) {
	return func(ctx context.Context, c *framework.Client) (func(), error) {
		_, try, err := mk(c, path)
		if err != nil {
			return nil, err
		}
		var l xlease
		for {
			if l, err = try(ctx); err == nil {
				return func() { _ = l.Release(context.Background()) }, nil
			}
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// checkExclusive: while the victim's lease is live, a contender on another client must
// not get the lock; if it does, the lease must learn of its loss within xLoss.
func checkExclusive(ctx context.Context, r *xrun, done <-chan struct{}, try func(context.Context) (xlease, error)) []string {
	select {
	case <-done:
		return nil // lost, and says so
	default:
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	other, err := try(tctx)
	cancel()
	if err != nil {
		return nil
	}
	defer func() { _ = other.Release(context.WithoutCancel(ctx)) }()
	select {
	case <-done:
		return nil
	case <-time.After(xLoss):
		return []string{fmt.Sprintf("exclusion: a contender on another client got the lock while the victim's lease stayed live %v later", xLoss)}
	}
}

func mutexLocker(c *framework.Client, path string) (acquire, try func(context.Context) (xlease, error), err error) {
	m, err := mutex.New(c, path)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) (xlease, error) { return asLease(m.Acquire(ctx)) },
		func(ctx context.Context) (xlease, error) { return asLease(m.TryAcquire(ctx)) }, nil
}

func semaphoreLocker(c *framework.Client, path string) (acquire, try func(context.Context) (xlease, error), err error) {
	s, err := semaphore.New(c, path, 1)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) (xlease, error) { return asLease(s.Acquire(ctx)) },
		func(ctx context.Context) (xlease, error) { return asLease(s.TryAcquire(ctx)) }, nil
}

func semMutexLocker(c *framework.Client, path string) (acquire, try func(context.Context) (xlease, error), err error) {
	m, err := semaphore.NewMutex(c, path)
	if err != nil {
		return nil, nil, err
	}
	s, err := semaphore.New(c, path, 1)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) (xlease, error) { return asLease(m.Acquire(ctx)) },
		func(ctx context.Context) (xlease, error) { return asLease(s.TryAcquire(ctx)) }, nil
}

func writeLocker(c *framework.Client, path string) (acquire, try func(context.Context) (xlease, error), err error) {
	rw, err := rwlock.New(c, path)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) (xlease, error) { return asLease(rw.WriteLock().Acquire(ctx)) },
		func(ctx context.Context) (xlease, error) { return asLease(rw.WriteLock().TryAcquire(ctx)) }, nil
}

// readLocker: the victim reads; the contender is a writer.
func readLocker(c *framework.Client, path string) (acquire, try func(context.Context) (xlease, error), err error) {
	rw, err := rwlock.New(c, path)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) (xlease, error) { return asLease(rw.ReadLock().Acquire(ctx)) },
		func(ctx context.Context) (xlease, error) { return asLease(rw.WriteLock().TryAcquire(ctx)) }, nil
}

// multilockOp: the victim takes a and b; the adversary holds b until the victim waits
// for it. The contender tries a, and takes a (contend).
func multilockOp() xop {
	return xop{name: "multilock-acquire", contends: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		a, b := r.w.base+"/a", r.w.base+"/b"
		ml, err := multilock.NewFromPaths(r.w.victim, a, b)
		if err != nil {
			return nil, err
		}
		bm, err := mutex.New(r.w.adv, b)
		if err != nil {
			return nil, err
		}
		held, err := bm.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		r.recordAdv(held.Node(), mustStat(ctx, r, held.Node()))
		// Free b once the victim queues behind it.
		r.background(func() {
			waitFor(r.bg, 30*time.Second, func() bool {
				kids, _, err := r.w.adv.Children(r.bg, b)
				return err == nil && len(kids) > 1 || isClosedCh(r.callDone)
			})
			r.forgetAdv(held.Node())
			_ = held.Release(r.bg)
		})
		_, try, err := mutexLocker(r.w.adv, a)
		if err != nil {
			return nil, err
		}
		var lease *multilock.MultiLease
		return &xround{
			call: func(ctx context.Context) (err error) {
				lease, err = ml.Acquire(ctx)
				return err
			},
			after: func(ctx context.Context, err error) []string {
				if err != nil {
					return nil
				}
				if v := heldBySession(ctx, r, lease.Done(), a, b); v != "" {
					return []string{v}
				}
				return checkExclusive(ctx, r, lease.Done(), try)
			},
			undo:    func(ctx context.Context) error { return lease.Release(ctx) },
			contend: lockContender(mutexLocker, a),
		}, nil
	}}
}

// heldBySession: when an acquisition returns success, each lock path has a node of the
// victim's session (read after a sync), unless the lease already says it is lost.
func heldBySession(ctx context.Context, r *xrun, done <-chan struct{}, paths ...string) string {
	sid := r.w.victim.SessionID()
	if err := r.w.adv.Sync(ctx, "/"); err != nil {
		return ""
	}
	for _, p := range paths {
		kids, _, err := r.w.adv.Children(ctx, p)
		if err != nil {
			return ""
		}
		held := false
		for _, k := range kids {
			if st, err := r.w.adv.Exists(ctx, framework.JoinPath(p, k)); err == nil && st != nil && st.EphemeralOwner == sid {
				held = true
			}
		}
		if !held && !isClosed(done) {
			return fmt.Sprintf("honest: Acquire returned success, but %s has no node of the victim's session (0x%x) and the lease is live", p, sid)
		}
	}
	return ""
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// semaphoreAcquireTryOp: TryAcquire right after an Acquire, on a 3-lease semaphore, gets
// a lease when nothing disturbs it.
func semaphoreAcquireTryOp() xop {
	return xop{name: "semaphore-acquire-try", setup: func(ctx context.Context, r *xrun) (*xround, error) {
		s, err := semaphore.New(r.w.victim, r.w.base+"/sem", 3)
		if err != nil {
			return nil, err
		}
		var leases []*semaphore.Lease
		return &xround{
			call: func(ctx context.Context) error {
				l, err := s.Acquire(ctx)
				if err != nil {
					return err
				}
				leases = append(leases, l)
				if l, err = s.TryAcquire(ctx); err != nil {
					return err
				}
				leases = append(leases, l)
				return nil
			},
			after: func(ctx context.Context, err error) []string {
				if r.k == 0 && err != nil {
					return []string{fmt.Sprintf("honest: an undisturbed TryAcquire right after an Acquire on a 3-lease semaphore failed: %v", err)}
				}
				return nil
			},
			undo: func(ctx context.Context) error { return semaphore.ReturnAll(ctx, leases...) },
			final: func(ctx context.Context) []string {
				_ = semaphore.ReturnAll(ctx, leases...) // leases a failed call got
				return nil
			},
		}, nil
	}}
}

func mustStat(ctx context.Context, r *xrun, p string) *framework.Stat {
	st, err := r.w.adv.Exists(ctx, p)
	if err != nil || st == nil {
		return &framework.Stat{}
	}
	return st
}

// semaphoreTryNOp: TryAcquireN(2) on a free 3-lease semaphore gets both leases when
// nothing disturbs it.
func semaphoreTryNOp() xop {
	return xop{name: "semaphore-tryacquire-n", setup: func(ctx context.Context, r *xrun) (*xround, error) {
		s, err := semaphore.New(r.w.victim, r.w.base+"/sem", 3)
		if err != nil {
			return nil, err
		}
		var leases []*semaphore.Lease
		return &xround{
			call: func(ctx context.Context) (err error) {
				leases, err = s.TryAcquireN(ctx, 2)
				return err
			},
			after: func(ctx context.Context, err error) []string {
				if r.k == 0 && err != nil {
					return []string{fmt.Sprintf("honest: an undisturbed TryAcquireN(2) on a free 3-lease semaphore failed: %v", err)}
				}
				return nil
			},
			undo: func(ctx context.Context) error { return semaphore.ReturnAll(ctx, leases...) },
		}, nil
	}}
}

// latchOp: a latch starts, awaits leadership, and closes. A contender latch on another
// client must not lead while the victim's latch says it leads.
func latchOp() xop {
	return xop{name: "latch", listeners: true, contends: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/latch"
		l, err := leader.NewLatch(r.w.victim, path, "victim")
		if err != nil {
			return nil, err
		}
		l.AddListener(func(bool) { r.listenerHook() })
		closeOnce := onceErr(l.Close)
		return &xround{
			call: func(ctx context.Context) error {
				if err := l.Start(ctx); err != nil {
					return err
				}
				return l.Await(ctx)
			},
			after: func(ctx context.Context, err error) []string {
				if err != nil || !l.HasLeadership() {
					return nil
				}
				other, err := leader.NewLatch(r.w.adv, path, "contender")
				if err != nil {
					return []string{err.Error()}
				}
				defer other.Close()
				if err := other.Start(ctx); err != nil {
					return nil
				}
				actx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				if other.Await(actx) != nil {
					return nil
				}
				if waitFor(ctx, xLoss, func() bool { return !l.HasLeadership() }) {
					return nil
				}
				return []string{"exclusion: a contender latch leads while the victim's latch still has leadership"}
			},
			undo:       func(ctx context.Context) error { return closeOnce() },
			undoCloses: true,
			close:      closeOnce,
			contend: func(ctx context.Context, c *framework.Client) (func(), error) {
				other, err := leader.NewLatch(c, path, "contender")
				if err != nil {
					return nil, err
				}
				if err := other.Start(ctx); err != nil {
					return nil, err
				}
				if err := other.Await(ctx); err != nil {
					_ = other.Close()
					return nil, err
				}
				return func() { _ = other.Close() }, nil
			},
		}, nil
	}}
}

// selectorOp: a selector starts and runs its function once; a contender selector on
// another client must not run while the victim's function runs.
func selectorOp() xop {
	return xop{name: "selector", contends: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/selector"
		running := make(chan struct{})
		stop := make(chan struct{})
		s, err := leader.NewSelector(r.w.victim, path, "victim", func(ctx context.Context) error {
			close(running)
			select {
			case <-stop:
			case <-ctx.Done():
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		closeOnce := onceErr(s.Close)
		var stopOnce func()
		stopOnce = func() {
			select {
			case <-stop:
			default:
				close(stop)
			}
		}
		return &xround{
			call: func(ctx context.Context) error {
				if err := s.Start(ctx); err != nil {
					return err
				}
				select {
				case <-running:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				case <-r.w.victim.Done(): // closed: the function will not run
					return framework.ErrClosed
				}
			},
			after: func(ctx context.Context, err error) []string {
				if err != nil || !s.HasLeadership() {
					return nil
				}
				ran := make(chan struct{}, 1)
				other, err := leader.NewSelector(r.w.adv, path, "contender", func(ctx context.Context) error {
					ran <- struct{}{}
					return nil
				})
				if err != nil {
					return []string{err.Error()}
				}
				defer other.Close()
				if err := other.Start(ctx); err != nil {
					return nil
				}
				select {
				case <-ran:
				case <-time.After(3 * time.Second):
					return nil
				}
				if waitFor(ctx, xLoss, func() bool { return !s.HasLeadership() }) {
					return nil
				}
				return []string{"exclusion: a contender selector ran its function while the victim's selector still has leadership"}
			},
			undo:       func(ctx context.Context) error { stopOnce(); return closeOnce() },
			undoCloses: true,
			close:      func() error { stopOnce(); return closeOnce() },
			contend: func(ctx context.Context, c *framework.Client) (func(), error) {
				running, stop := make(chan struct{}), make(chan struct{})
				other, err := leader.NewSelector(c, path, "contender", func(ctx context.Context) error {
					close(running)
					select {
					case <-stop:
					case <-ctx.Done():
					}
					return nil
				})
				if err != nil {
					return nil, err
				}
				if err := other.Start(ctx); err != nil {
					return nil, err
				}
				select {
				case <-running:
					return func() { close(stop); _ = other.Close() }, nil
				case <-ctx.Done():
					_ = other.Close()
					return nil, ctx.Err()
				}
			},
		}, nil
	}}
}

// onceErr makes fn run once; later calls return its first result.
func onceErr(fn func() error) func() error {
	var (
		done bool
		err  error
		mu   = make(chan struct{}, 1)
	)
	return func() error {
		mu <- struct{}{}
		defer func() { <-mu }()
		if !done {
			done, err = true, fn()
		}
		return err
	}
}

// xlockOps are the lock and leader operations.
var xlockOps = []xop{
	lockOp("mutex-acquire", mutexLocker),
	lockOp("semaphore-acquire", semaphoreLocker),
	lockOp("semaphore-mutex-acquire", semMutexLocker),
	lockOp("rwlock-write-acquire", writeLocker),
	lockOp("rwlock-read-acquire", readLocker),
	multilockOp(),
	semaphoreTryNOp(),
	semaphoreAcquireTryOp(),
	latchOp(),
	selectorOp(),
}
