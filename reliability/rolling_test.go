package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	zatomic "github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

// The rolling restart: every member of the 3-member ensemble is stopped
// (SIGTERM, as an operator or Kubernetes does), left down for rollingDown, started again
// and waited for until it has rejoined the quorum (zktest's WaitRejoined) — the followers
// first and the leader last, as in a rolling upgrade — while every recipe runs on three
// clients (the victim, with a 2 s session behind its proxy, and two with 6 s sessions, all
// under the standard error policy: a lease ends as soon as its connection is suspended).
// Stopping the leader drops every client's connection (the followers stop serving until a
// new leader is elected); stopping a follower drops those of its clients.
//
// The checkers are the fault suite's: overlap (locks, latch, selector: never more holders
// or leaders than allowed, counting a holder until its Done), fencing, the ownership ledger
// (no lock node owned by two leases), porcupine on a recipes/atomic counter's history, the
// queue's delivery ledger, the shared count's bounds, the persistent node's "never two
// nodes", the caches (tree cache, discovery provider, group member) back to the server's
// view, liveness, cleanliness (env.checkClean: no node, ephemeral or watch left; containers
// reaped) and leakcheck.
//
// Availability is measured, not asserted (beyond the liveness bound). Each recipe has a
// stream of successes: an acquisition (mutex, semaphore, rwlock), a leadership taken
// (selector), a completed enter-and-leave (double barrier), an applied increment (shared
// count), an operation with a definite outcome (atomic), a delivery (queue), a write seen
// by the tree cache, and, for what is a state rather than an operation, a sample every
// 25 ms that found it in place through another client: the latch has a leader, the
// persistent node exists owned by the victim's current session, every group member is
// registered, both discovery instances are registered. A recipe's unavailable time in a
// round is the longest interval without a success between the moment the member was told
// to stop and the recipe's first success after the member rejoined; the steady-state
// figure is the same measure over rollingSteady of quiet before the first stop, the
// recipe's own rhythm.

// rollingDown is how long a stopped member stays down before it is started again.
const rollingDown = time.Second

// rollingSteady is how long the recipes run undisturbed before the first stop.
const rollingSteady = 2 * time.Second

// rollingBarrierTimeout bounds each Enter and each Leave of the double barrier's members.
const rollingBarrierTimeout = 10 * time.Second

// rollingSample is the period of the samplers.
const rollingSample = 25 * time.Millisecond

// stream is when one recipe succeeded. It is safe for concurrent use.
type stream struct {
	name  string
	what  string // what counts as a success
	mu    sync.Mutex
	at    []time.Time
	fails int
	errs  []string // the first failures
}

func (s *stream) ok() {
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
}

func (s *stream) fail(err error) {
	s.mu.Lock()
	s.fails++
	if len(s.errs) < 5 {
		s.errs = append(s.errs, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
	}
	s.mu.Unlock()
}

func (s *stream) counts() (ok, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at), s.fails
}

// firstAfter returns the first success after t.
func (s *stream) firstAfter(t time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearchFunc(s.at, t, func(a, b time.Time) int { return a.Compare(b) })
	for ; i < len(s.at); i++ {
		if s.at[i].After(t) {
			return s.at[i], true
		}
	}
	return time.Time{}, false
}

// maxGap returns the longest interval within [from, to] without a success: from, the
// successes between, and to are the points.
func (s *stream) maxGap(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, gap := from, time.Duration(0)
	for _, a := range s.at {
		if !a.After(from) || a.After(to) {
			continue
		}
		gap = max(gap, a.Sub(last))
		last = a
	}
	return max(gap, to.Sub(last))
}

// rollRound is one member's restart.
type rollRound struct {
	member                   int
	wasLeader                bool
	stop, started, rejoined  time.Time
	gap                      map[string]time.Duration // per recipe: the unavailable time
	recovered                map[string]time.Duration // per recipe: first success after rejoin, from the rejoin
	stopTook, rejoinDuration time.Duration
	leaderAfter              time.Duration // from the member's exit until a member served as leader
}

// roller runs the recipes' workers and samplers until stop.
type roller struct {
	t       *testing.T
	e       *env
	admin   *framework.Client
	ctx     context.Context // ends when the workers must stop
	wg      sync.WaitGroup
	streams []*stream
}

func (r *roller) stream(name, what string) *stream {
	s := &stream{name: name, what: what}
	r.streams = append(r.streams, s)
	return s
}

// goLoop runs step until the roller stops, pausing pace between steps.
func (r *roller) goLoop(pace time.Duration, step func(ctx context.Context)) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for r.ctx.Err() == nil {
			step(r.ctx)
			select {
			case <-r.ctx.Done():
			case <-time.After(pace):
			}
		}
	}()
}

// sample adds a sampler: s succeeds each time ok holds.
func (r *roller) sample(s *stream, ok func(ctx context.Context) bool) {
	r.goLoop(rollingSample, func(ctx context.Context) {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if ok(sctx) {
			s.ok()
		}
	})
}

// rollingLocks are the lock recipes of the rolling restart (locks_test.go's).
var rollingLocks = []string{"mutex", "semaphore-2", "rwlock"}

// lockWorkers runs four workers of lock recipe lr over the clients; every acquisition is a
// success of s; holders are counted in ov, exclusive ones write to the fenced store st, and
// lease nodes go into the ownership ledger.
func (r *roller) lockWorkers(lr lockRecipe, s *stream, ov *overlap, st *store, led *ownLedger, losses *atomic.Int64) {
	clients := r.e.clients()
	for w := range 4 {
		acquire, excl := lr.worker(r.t, clients[w%len(clients)], r.e.base, w)
		inst := fmt.Sprintf("%s-w%d", lr.name, w)
		r.goLoop(10*time.Millisecond, func(ctx context.Context) {
			actx, acancel := context.WithTimeout(ctx, 15*time.Second)
			l, err := acquire(actx)
			acancel()
			if err != nil {
				if ctx.Err() == nil {
					s.fail(err)
				}
				return
			}
			s.ok()
			ov.enter(excl)
			var claimed *nodeID
			if tk, ok := l.(tokened); ok {
				tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
				tok, err := tk.Token(tctx)
				tcancel()
				if nd, ok := l.(interface{ Node() string }); ok && err == nil {
					n := nodeID{nd.Node(), tok}
					led.claim(inst, n)
					claimed = &n
				}
				if excl && err == nil {
					v := st.read()
					select {
					case <-l.Done(): // possibly lost: do not write
					default:
						st.write(tok, v)
					}
				}
			}
			select {
			case <-time.After(20 * time.Millisecond):
			case <-l.Done():
				losses.Add(1)
			}
			ov.exit(excl)
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = l.Release(rctx) // a lost lease reports it; its node is removed anyway
			rcancel()
			if claimed != nil {
				led.release(inst, *claimed)
			}
		})
	}
}

func TestRollingRestart(t *testing.T) {
	leakcheck.Check(t)
	require.True(t, ens.Controllable(), "a rolling restart needs an ensemble whose members the test controls")
	start := time.Now()
	e := newEnv(t, 2)
	admin := connect(t, ens.ConnectString(), otherSession)
	clients := e.clients()
	base := e.base
	setup, setupCancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer setupCancel()
	wctx, stopWorkers := context.WithCancel(context.Background())
	defer stopWorkers()
	r := &roller{t: t, e: e, admin: admin, ctx: wctx}
	var closers []func() error
	defer func() {
		stopWorkers()
		r.wg.Wait()
		for _, c := range slices.Backward(closers) {
			_ = c()
		}
	}()

	// Locks.
	type lockRun struct {
		lr     lockRecipe
		s      *stream
		ov     *overlap
		st     *store
		led    *ownLedger
		losses atomic.Int64
	}
	var locks []*lockRun
	for _, name := range rollingLocks {
		i := slices.IndexFunc(lockRecipes, func(lr lockRecipe) bool { return lr.name == name })
		require.GreaterOrEqual(t, i, 0, name)
		lr := lockRecipes[i]
		lk := &lockRun{lr: lr, s: r.stream(name, "acquisition"), ov: newOverlap(lr.maxShared), st: &store{fenced: true}, led: newOwnLedger()}
		locks = append(locks, lk)
		r.lockWorkers(lr, lk.s, lk.ov, lk.st, lk.led, &lk.losses)
	}

	// Leader latch: one participant per client; a leader's term counts from the listener
	// until the term's Done.
	latchPath := base + "/latch"
	latchS := r.stream("leader latch", "sample: a leader")
	latchOv := newOverlap(1)
	var termWG sync.WaitGroup
	var latches []*leader.Latch
	for i, c := range clients {
		l, err := leader.NewLatch(c, latchPath, fmt.Sprintf("p%d", i))
		require.NoError(t, err)
		l.AddListener(func(isLeader bool) {
			if !isLeader {
				return
			}
			term, err := l.Term()
			if err != nil {
				return // the term ended before we heard of it
			}
			latchOv.enter(true)
			termWG.Add(1)
			go func() {
				defer termWG.Done()
				<-term.Done()
				latchOv.exit(true)
			}()
		})
		require.NoError(t, l.Start(setup))
		latches = append(latches, l)
	}
	closeLatches := func() error {
		for _, l := range latches {
			_ = l.Close()
		}
		termWG.Wait()
		return nil
	}
	closers = append(closers, closeLatches)
	r.sample(latchS, func(context.Context) bool {
		return slices.ContainsFunc(latches, (*leader.Latch).HasLeadership)
	})

	// Leader selector: one per client, requeued after each leadership of 50 ms.
	selPath := base + "/selector"
	selS := r.stream("leader selector", "leadership taken")
	selOv := newOverlap(1)
	var selectors []*leader.Selector
	for i, c := range clients {
		s, err := leader.NewSelector(c, selPath, fmt.Sprintf("s%d", i), func(ctx context.Context) error {
			selOv.enter(true)
			selS.ok()
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
			}
			selOv.exit(true)
			return nil
		}, leader.AutoRequeue())
		require.NoError(t, err)
		require.NoError(t, s.Start(setup))
		selectors = append(selectors, s)
		closers = append(closers, s.Close)
	}

	// Double barrier: three members, entering and leaving round after round, each on a
	// client of its own (one behind the victim's proxy with the victim's 2 s session, two
	// direct), closed before the cleanliness check: an Enter that fails (its deadline, or
	// the end of the scenario) leaves its exists watch on <path>/ready registered until a
	// ready is made again or the session ends (a defect of the recipe). Its
	// nodes are checked while the sessions live.
	dbPath := base + "/db"
	dbS := r.stream("double barrier", "enter and leave")
	dbClients := []*framework.Client{
		connect(t, ens.ConnectString(), victimSession, framework.WithDialer(e.proxy.Dialer())),
		connect(t, ens.ConnectString(), otherSession),
		connect(t, ens.ConnectString(), otherSession),
	}
	// The members run until stopBarrier cancels them, wherever they are in their round: an
	// Enter or Leave cut short withdraws the member, and the last member node to go takes
	// a ready left behind with it.
	dbCtx, dbCancel := context.WithCancel(context.Background())
	var dbWG sync.WaitGroup
	stopBarrier := func() { dbCancel(); dbWG.Wait() }
	defer stopBarrier()
	for i, c := range dbClients {
		d, err := doublebarrier.New(c, dbPath, len(clients))
		require.NoError(t, err)
		dbWG.Add(1)
		go func() {
			defer dbWG.Done()
			for dbCtx.Err() == nil {
				began := time.Now()
				phase := "enter"
				ectx, cancel := context.WithTimeout(dbCtx, rollingBarrierTimeout)
				err := d.Enter(ectx)
				cancel()
				if err == nil {
					phase = "leave"
					lctx, cancel := context.WithTimeout(dbCtx, rollingBarrierTimeout)
					err = d.Leave(lctx)
					cancel()
				}
				if err == nil {
					dbS.ok()
					select {
					case <-time.After(10 * time.Millisecond):
					case <-dbCtx.Done():
					}
					continue
				}
				if dbCtx.Err() != nil {
					return // stopped: no failure
				}
				// What the barrier held when this member gave up, for the log.
				lctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				kids, _, lerr := admin.Children(lctx, dbPath)
				cancel()
				dbS.fail(fmt.Errorf("member %d (%s), began %s, in %s: %w; the barrier held %v (err %v)",
					i, d.Node(), began.Format("15:04:05.000"), phase, err, kids, lerr))
			}
		}()
	}

	// Shared count: compare-and-set increments from two clients; each applied one is a
	// success.
	countPath := base + "/count"
	countS := r.stream("shared count", "applied increment")
	var countApplied, countUnknown, countConflicts atomic.Int64
	for _, c := range clients[:2] {
		sc, err := sharedcount.New(c, countPath, 0)
		require.NoError(t, err)
		require.NoError(t, sc.Start(setup))
		closers = append(closers, sc.Close)
		r.goLoop(20*time.Millisecond, func(ctx context.Context) {
			v, err := sc.Get()
			if err != nil {
				return
			}
			ictx, cancel := context.WithTimeout(ctx, time.Second)
			err = sc.TrySet(ictx, v, v.Value+1)
			cancel()
			switch {
			case err == nil:
				countApplied.Add(1)
				countS.ok()
			case errors.Is(err, sharedcount.ErrConflict):
				countConflicts.Add(1)
			case errors.Is(err, sharedcount.ErrUnknownOutcome):
				countUnknown.Add(1)
			case ctx.Err() == nil:
				countS.fail(err)
			}
		})
	}

	// Atomic counter: increments, compare-and-sets and (synced) gets from every client,
	// recorded for porcupine.
	ctrPath := base + "/counter"
	ctrS := r.stream("atomic counter", "definite outcome")
	ctrRec := &recorder{}
	init, err := zatomic.NewLong(admin, ctrPath)
	require.NoError(t, err)
	require.NoError(t, init.ForceSet(setup, 0))
	seed := uint64(pathSeq.Add(1))
	for i, c := range clients {
		ctr, err := zatomic.NewLong(c, ctrPath)
		require.NoError(t, err)
		op := counterWorker(c, ctr, i, ctrRec, rand.New(rand.NewPCG(seed, uint64(i))))
		r.goLoop(50*time.Millisecond, func(ctx context.Context) {
			if op(ctx) {
				ctrS.ok()
			}
		})
	}

	// Queue: two clients put and consume (with a lock path); each delivery is a success.
	qPath, qLocks := base+"/q", base+"/qlocks"
	queueS := r.stream("queue", "delivery")
	ql := newQueueLedger()
	var consumers sync.WaitGroup
	cctx, stopConsumers := context.WithCancel(context.Background())
	defer stopConsumers()
	closers = append(closers, func() error { stopConsumers(); consumers.Wait(); return nil })
	var queues []*queue.Queue[string]
	for i, c := range clients[:2] {
		q, err := queue.New(c, qPath, queue.String{}, queue.WithLockPath(qLocks), queue.WithErrorListener(ql.report))
		require.NoError(t, err)
		queues = append(queues, q)
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			_ = q.Consume(cctx, func(ctx context.Context, item string) error {
				queueS.ok()
				return ql.deliver(ctx, item)
			})
		}()
		n := 0
		r.goLoop(40*time.Millisecond, func(ctx context.Context) {
			item := fmt.Sprintf("%d-%d", i, n)
			n++
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			node, err := q.Put(pctx, item)
			cancel()
			ql.put(item, node, err)
		})
	}

	// Persistent node: a protected ephemeral-sequential node kept by the victim; a sampler
	// finds it owned by the victim's current session; a watcher on the parent sees at most
	// one node at a time.
	pnParent := base + "/pn"
	pnS := r.stream("persistent node", "sample: in place, current session")
	pn, err := persistentnode.New(e.victim, pnParent+"/member-", []byte("v"),
		persistentnode.WithMode(framework.EphemeralSequential), persistentnode.WithProtection())
	require.NoError(t, err)
	require.NoError(t, pn.Start())
	closers = append(closers, pn.Close)
	require.NoError(t, pn.WaitForInitialCreate(setup))
	r.sample(pnS, func(ctx context.Context) bool {
		p := pn.ActualPath()
		if p == "" {
			return false
		}
		st, err := admin.Exists(ctx, p)
		return err == nil && st != nil && st.EphemeralOwner == e.victim.SessionID()
	})
	var pnMost atomic.Int64
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for wctx.Err() == nil {
			rctx, cancel := context.WithTimeout(wctx, 2*time.Second)
			kids, _, w, err := admin.ChildrenW(rctx, pnParent)
			cancel()
			if err != nil {
				pause(wctx.Done())
				continue
			}
			if n := int64(len(kids)); n > pnMost.Load() {
				pnMost.Store(n)
			}
			select {
			case <-w.Done():
			case <-wctx.Done():
			}
		}
	}()

	// Group member: one per client; a sampler finds all three registered.
	group := base + "/group"
	groupS := r.stream("group member", "sample: all registered")
	var members []*groupmember.Member
	for i, c := range clients {
		m, err := groupmember.New(c, group, fmt.Sprintf("m%d", i), []byte(strconv.Itoa(i)))
		require.NoError(t, err)
		require.NoError(t, m.Start(setup))
		closers = append(closers, m.Close)
		members = append(members, m)
	}
	r.sample(groupS, func(ctx context.Context) bool {
		kids, _, err := admin.Children(ctx, group)
		return err == nil && len(kids) == len(clients)
	})

	// Discovery: the victim and another client each register an instance; a third
	// client's provider follows the service; a sampler queries both on the server.
	discBase := base + "/services"
	discS := r.stream("discovery", "sample: both registered")
	var provider *discovery.ServiceProvider[string]
	var querier *discovery.ServiceDiscovery[string]
	for i, c := range clients {
		d, err := discovery.New[string](c, discBase)
		require.NoError(t, err)
		closers = append(closers, d.Close)
		if i == 2 {
			querier = d
			provider, err = discovery.NewProvider(d, "svc")
			require.NoError(t, err)
			require.NoError(t, provider.Start(setup))
			closers = append(closers, provider.Close)
			break
		}
		inst, err := discovery.NewInstance("svc", fmt.Sprint(i), discovery.WithID(fmt.Sprintf("i%d", i)))
		require.NoError(t, err)
		require.NoError(t, d.Register(setup, inst))
	}
	r.sample(discS, func(ctx context.Context) bool {
		got, err := querier.QueryForInstances(ctx, "svc")
		return err == nil && len(got) == 2
	})

	// Tree cache on the victim; another client writes a counter into one of its nodes;
	// each new value the cache reports is a success.
	treeRoot := base + "/tree"
	cacheS := r.stream("tree cache", "write seen by the cache")
	for _, p := range []string{treeRoot + "/a/x", treeRoot + "/b"} {
		_, err := admin.Create(setup, p, []byte("0"), framework.WithContainerParents())
		require.NoError(t, err)
	}
	tc, err := cache.NewTreeCache(e.victim, treeRoot, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	var seen atomic.Int64
	tc.AddListener(func(ev cache.Event) {
		if ev.Data == nil || ev.Data.Path != treeRoot+"/a/x" {
			return
		}
		if n, err := strconv.ParseInt(string(ev.Data.Data), 10, 64); err == nil && n > seen.Load() {
			seen.Store(n)
			cacheS.ok()
		}
	})
	require.NoError(t, tc.Start(setup))
	closers = append(closers, tc.Close)
	var written atomic.Int64
	r.goLoop(50*time.Millisecond, func(ctx context.Context) {
		n := written.Load() + 1
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := clients[1].SetData(sctx, treeRoot+"/a/x", []byte(strconv.FormatInt(n, 10)), -1); err == nil {
			written.Store(n)
		}
	})

	// Every recipe is going.
	for _, s := range r.streams {
		require.Eventually(t, func() bool { n, _ := s.counts(); return n >= 3 }, time.Minute, 10*time.Millisecond,
			"%s: no successes before the restarts", s.name)
	}
	warm := time.Now()
	time.Sleep(rollingSteady)

	// The rolling restart: followers first, the leader last.
	var rounds []*rollRound
	done := map[int]bool{}
	for len(done) < ens.Size() {
		ld, lerr := ens.Leader()
		pick := -1
		for i := range ens.Size() {
			if !done[i] && (lerr != nil || i != ld) {
				pick = i
				break
			}
		}
		if pick < 0 {
			pick = ld
		}
		done[pick] = true
		rd := &rollRound{member: pick, wasLeader: lerr == nil && pick == ld, gap: map[string]time.Duration{}, recovered: map[string]time.Duration{}}
		rounds = append(rounds, rd)
		rd.stop = time.Now()
		t.Logf("rolling: stopping member %d at %s", pick, rd.stop.Format("15:04:05.000"))
		require.NoError(t, ens.Terminate(pick))
		exited := time.Now()
		rd.stopTook = exited.Sub(rd.stop)
		// How long the ensemble itself had no serving leader once the member had exited
		// (the figure beneath every recipe's): polled every 20 ms until it rejoined.
		elected := make(chan time.Duration, 1)
		ectx, ecancel := context.WithCancel(context.Background())
		go func() {
			for ectx.Err() == nil {
				if _, err := ens.Leader(); err == nil {
					elected <- time.Since(exited)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			elected <- -1
		}()
		time.Sleep(rollingDown)
		rd.started = time.Now()
		require.NoError(t, ens.Restart(pick))
		jctx, jcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, err := ens.WaitRejoined(jctx, pick)
		jcancel()
		require.NoError(t, err, "member %d did not rejoin", pick)
		rd.rejoined = time.Now()
		rd.rejoinDuration = rd.rejoined.Sub(rd.started)
		ecancel()
		rd.leaderAfter = <-elected
		// Liveness: every recipe succeeds again after the member rejoined.
		for _, s := range r.streams {
			var first time.Time
			lively := assert.Eventually(t, func() bool {
				var ok bool
				first, ok = s.firstAfter(rd.rejoined)
				return ok
			}, livenessBound, 10*time.Millisecond, "liveness: %s does not succeed within %v after member %d rejoined", s.name, livenessBound, pick)
			count(t, "liveness", checkCount{ops: 1, violations: btoi(!lively)})
			if lively {
				rd.gap[s.name] = s.maxGap(rd.stop, first)
				rd.recovered[s.name] = first.Sub(rd.rejoined)
			}
		}
		t.Logf("rolling: member %d (leader: %v) stopped in %v, down %v, rejoined %v after its start; a leader served %v after it exited",
			pick, rd.wasLeader, rd.stopTook.Round(time.Millisecond), rollingDown, rd.rejoinDuration.Round(time.Millisecond), rd.leaderAfter.Round(time.Millisecond))
	}
	restarts := time.Since(rounds[0].stop)
	victimGen, _ := e.victim.Session()

	// Stop the workers, then the producers' items are delivered before the consumers go.
	stopWorkers()
	r.wg.Wait()
	require.Eventually(t, func() bool { return ql.pending() == 0 }, livenessBound, 20*time.Millisecond,
		"liveness: items put are not all delivered after the restarts")
	require.Eventually(t, func() bool {
		kids, _, err := admin.Children(setup, qPath)
		return err == nil && len(kids) == 0
	}, livenessBound, 20*time.Millisecond, "the queue does not empty")
	stopConsumers()
	consumers.Wait()

	// The double barrier's members leave nothing behind; then their clients go (see above).
	stopBarrier()
	for _, c := range dbClients {
		require.NoError(t, c.WaitGuaranteedDeletes(setup))
	}
	var dbLeft []string
	if !assert.Eventually(t, func() bool {
		kids, _, err := admin.Children(setup, dbPath)
		dbLeft = kids
		return errors.Is(err, framework.ErrNoNode) || (err == nil && len(kids) == 0)
	}, 30*time.Second, 50*time.Millisecond) {
		t.Errorf("cleanliness: double barrier nodes left: %v", dbLeft)
	}
	dbWatches := watchesUnder(t, dbPath+"/")
	for _, c := range dbClients {
		require.NoError(t, c.Close())
	}

	// The caches come back to the server's view.
	var last string
	assert.Eventually(t, func() bool {
		want, err := serverTree(setup, admin, treeRoot)
		if err != nil {
			return false
		}
		last = diff(cacheTree(tc), want)
		return last == ""
	}, livenessBound, 100*time.Millisecond, "the tree cache does not match the server:\n%s", last)
	assert.Eventually(t, func() bool {
		got, err := provider.GetAllInstances()
		return err == nil && len(got) == 2
	}, livenessBound, 50*time.Millisecond, "the discovery provider does not list both instances")
	for _, m := range members {
		assert.Eventually(t, func() bool {
			cur, err := m.CurrentMembers()
			return err == nil && len(cur) == len(clients)
		}, livenessBound, 50*time.Millisecond, "member %s does not see the whole group", m.ID())
	}

	// The checkers.
	checked := map[string]string{}
	for _, lk := range locks {
		entries, violations := lk.ov.counts()
		assert.Zero(t, violations, "overlap: more holders of the %s than allowed", lk.lr.name)
		count(t, "overlap", checkCount{ops: entries, violations: violations})
		accepted, rejected, lost := lk.st.counts()
		assert.Zero(t, lost, "fencing: an accepted write lost an update (%s)", lk.lr.name)
		count(t, "fencing", checkCount{ops: accepted + rejected, violations: lost})
		lk.led.finish(nil)
		probs := lk.led.report()
		for _, p := range probs {
			t.Errorf("ownership (%s): %s", lk.lr.name, p)
		}
		count(t, "ownership", checkCount{ops: lk.led.ops, violations: len(probs)})
		checked[lk.lr.name] = fmt.Sprintf("overlap %d holds (%d ended by Done), fencing %d writes, ledger %d records: %d violations",
			entries, lk.losses.Load(), accepted+rejected, lk.led.ops, violations+lost+len(probs))
	}
	require.NoError(t, closeLatches())
	terms, latchViolations := latchOv.counts()
	assert.Zero(t, latchViolations, "two latch leaders at once")
	count(t, "overlap", checkCount{ops: terms, violations: latchViolations})
	checked["leader latch"] = fmt.Sprintf("overlap %d terms: %d violations", terms, latchViolations)
	for _, s := range selectors {
		require.NoError(t, s.Close())
	}
	leads, selViolations := selOv.counts()
	assert.Zero(t, selViolations, "two selector leaders at once")
	count(t, "overlap", checkCount{ops: leads, violations: selViolations})
	checked["leader selector"] = fmt.Sprintf("overlap %d leaderships: %d violations", leads, selViolations)

	var final int32
	require.Eventually(t, func() bool {
		rctx, cancel := context.WithTimeout(setup, 2*time.Second)
		defer cancel()
		if admin.Sync(rctx, countPath) != nil {
			return false
		}
		data, _, err := admin.GetData(rctx, countPath)
		if err != nil {
			return false
		}
		final, err = sharedcount.Decode(countPath, data)
		return err == nil
	}, livenessBound, 50*time.Millisecond)
	applied, unknown := int(countApplied.Load()), int(countUnknown.Load())
	lostInc := !assert.GreaterOrEqual(t, int(final), applied, "an increment reported applied was lost")
	extraInc := !assert.LessOrEqual(t, int(final), applied+unknown, "an increment was applied that was reported not applied")
	count(t, "increments", checkCount{ops: applied + unknown + int(countConflicts.Load()), unknown: unknown, violations: btoi(lostInc) + btoi(extraInc)})
	checked["shared count"] = fmt.Sprintf("bounds: %d applied ≤ %d ≤ %d applied+unknown (%d conflicts)", applied, final, applied+unknown, countConflicts.Load())

	ctrOps, ctrUnknown := ctrRec.counts()
	res := checkHistory(t, "rolling-counter", counterModel, ctrRec.history())
	assert.NotEqual(t, porcupine.Illegal, res, "linearizability: the atomic counter's history under the rolling restart")
	count(t, "linearizability", checkCount{ops: ctrOps, unknown: ctrUnknown, violations: btoi(res == porcupine.Illegal)})
	checked["atomic counter"] = fmt.Sprintf("porcupine: %d operations (%d unknown): %s", ctrOps, ctrUnknown, res)

	lost, unexplained, extra := ql.check()
	assert.Empty(t, lost, "items lost")
	assert.Zero(t, unexplained, "items delivered twice without a reason")
	count(t, "conservation", checkCount{ops: len(ql.puts), violations: len(lost) + unexplained})
	checked["queue"] = fmt.Sprintf("delivery ledger: %d puts, %d deliveries, %d lost, %d unexplained duplicates (%d explained)",
		len(ql.puts), ql.total(), len(lost), unexplained, extra)

	most := pnMost.Load()
	assert.LessOrEqual(t, most, int64(1), "the persistent node's parent held %d nodes at once", most)
	count(t, "one-node", checkCount{ops: 1, violations: btoi(most > 1)})
	checked["persistent node"] = fmt.Sprintf("at most one node: %d seen at once", most)
	checked["double barrier"] = fmt.Sprintf("liveness, no node left; %d watches on ready left by failed Enters", dbWatches)
	checked["group member"] = "caches back to all members, cleanliness"
	checked["discovery"] = "provider back to both instances, cleanliness"
	checked["tree cache"] = "cache equals the server's tree"

	// Close everything, delete the persistent nodes, check that nothing is left.
	for _, c := range slices.Backward(closers) {
		assert.NoError(t, c())
	}
	closers = nil
	dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
	defer dcancel()
	for _, p := range []string{qPath, qLocks, countPath, ctrPath} {
		require.NoError(t, admin.Delete(dctx, p, framework.WithChildren())) // persistent, as Curator's
	}
	require.NoError(t, admin.Delete(dctx, treeRoot, framework.WithChildren(), framework.Quietly()))
	var paths []string
	for _, lk := range locks {
		paths = append(paths, lk.lr.paths(base)...)
	}
	paths = append(paths, latchPath, selPath, dbPath, pnParent, group, discBase+"/svc")
	e.checkClean(paths...)
	if t.Failed() {
		watchesUnder(t, base+"/")
	}

	// The figures.
	t.Logf("rolling restart: %d members restarted one at a time in %v (test %v); each down %v, then waited for until it rejoined; the victim's client (2 s session) is on its session generation %d",
		len(rounds), restarts.Round(100*time.Millisecond), time.Since(start).Round(time.Second), rollingDown, victimGen)
	var hdr strings.Builder
	hdr.WriteString("| recipe | success | steady-state max gap |")
	sep := "|---|---|---|"
	for _, rd := range rounds {
		role := "follower"
		if rd.wasLeader {
			role = "leader"
		}
		fmt.Fprintf(&hdr, " member %d (%s) |", rd.member, role)
		sep += "---|"
	}
	hdr.WriteString(" worst | successes (failed) | checked |")
	var ensRow strings.Builder
	ensRow.WriteString("| (ensemble) | a member serves as leader; from the stopped member's exit | — |")
	ensWorst := time.Duration(0)
	for _, rd := range rounds {
		ensWorst = max(ensWorst, rd.leaderAfter)
		fmt.Fprintf(&ensRow, " %s |", secs(rd.leaderAfter))
	}
	fmt.Fprintf(&ensRow, " %s | | |", secs(ensWorst))
	sep += "---|---|---|"
	t.Log(hdr.String())
	t.Log(sep)
	t.Log(ensRow.String())
	for _, s := range r.streams {
		var b strings.Builder
		fmt.Fprintf(&b, "| %s | %s | %s |", s.name, s.what, secs(s.maxGap(warm, rounds[0].stop)))
		worst := time.Duration(0)
		for _, rd := range rounds {
			g, ok := rd.gap[s.name]
			if !ok {
				b.WriteString(" — |")
				continue
			}
			worst = max(worst, g)
			fmt.Fprintf(&b, " %s |", secs(g))
		}
		n, failed := s.counts()
		fmt.Fprintf(&b, " %s | %d (%d) | %s |", secs(worst), n, failed, checked[s.name])
		t.Log(b.String())
	}
	for _, s := range r.streams {
		if len(s.errs) > 0 {
			t.Logf("%s: first failures: %s", s.name, strings.Join(s.errs, "; "))
		}
	}
}

// watchesUnder logs the watches that the members hold on paths starting with prefix,
// by session (wchc), and returns how many there are.
func watchesUnder(t *testing.T, prefix string) int {
	t.Helper()
	n := 0
	for i := range ens.Size() {
		out, err := zktest.FourLetterWord(ens.Addr(i), "wchc", 5*time.Second)
		if err != nil {
			t.Logf("wchc on member %d: %v", i, err)
			continue
		}
		session := ""
		for _, line := range strings.Split(out, "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "0x"):
				session = line
			case strings.HasPrefix(line, prefix):
				n++
				t.Logf("member %d: session %s watches %s", i, session, line)
			}
		}
	}
	return n
}

// secs formats d in seconds with two decimals.
func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
