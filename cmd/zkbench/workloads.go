package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/retry"
)

// op is one operation of one worker. It returns the latency to report (the acquire, or
// the whole cycle, as the workload defines) and stops the run with an error.
type op func(ctx context.Context) (time.Duration, error)

// workload is one named benchmark of WORKLOADS.md. Adding one is writing its prepare
// function and an entry in workloads.
type workload struct {
	impl string // the "impl" of the line: "zoocurator", or "go-zookeeper" for the reference workloads
	// raw: the sessions are bare go-zookeeper connections (env.conns), not framework
	// clients (env.clients).
	raw bool
	// doc is the one-line definition --help prints.
	doc string
	// allowed is how many holders the check allows at once (0: the workload has no
	// check, or a check of its own, as rwmixed's).
	allowed int
	// rounds: the workload runs in rounds of all C×G workers (doublebarrier); an op is
	// one worker's part in one round, and the line carries "members" and "rounds".
	rounds bool
	// uncounted: zk_requests_per_op cannot be counted exactly (the requests happen inside
	// a library that does not report them) and is left out rather than guessed.
	uncounted bool
	// nodes returns the paths whose children max_nodes sums (nil: no max_nodes).
	nodes func(base string) []string
	// prepare runs before the start barrier: it builds what the workers share and returns
	// the factory of each worker's operation (session index ci, goroutine index gi).
	prepare func(ctx context.Context, e *env) (func(ci, gi int) (op, error), error)
	scale   bool // run by executeScale, not execute
}

// workloads holds every workload of docs/benchmark.md.
var workloads = map[string]workload{
	"mutex": {impl: implOurs, allowed: 1, nodes: basePath, prepare: prepareMutex(false),
		doc: "own mutex.Mutex per worker on <base>; acquire (measured), check (1 holder), release"},
	"mutex-shared": {impl: implOurs, allowed: 1, nodes: basePath, prepare: prepareMutex(true),
		doc: "one mutex.Mutex per session, shared by its G goroutines (--local-batch); acquire (measured), check, release"},
	"semmutex": {impl: implOurs, allowed: 1, nodes: semaphorePaths, prepare: prepareSemaphore(0),
		doc: "own semaphore mutex (semaphore.NewMutex) per worker on <base>; acquire (measured), check (1 holder), release"},
	"semaphore": {impl: implOurs, allowed: semaphoreLeases, nodes: semaphorePaths, prepare: prepareSemaphore(semaphoreLeases),
		doc: "own semaphore with 3 leases per worker, all on <base>; acquire 1 lease (measured), check (3 holders), release"},
	"rwread": {impl: implOurs, nodes: basePath, prepare: prepareRW(false),
		doc: "own rwlock.RWLock per worker on <base>; read-acquire (measured), release; no check"},
	"rwmixed": {impl: implOurs, nodes: basePath, prepare: prepareRW(true),
		doc: "own rwlock.RWLock per worker on <base>; each worker's op 10, 20, ... write-acquires, the others read-acquire (measured); check: a writer overlapping anyone is a violation"},
	"multilock": {impl: implOurs, allowed: 1, nodes: multilockPaths, prepare: prepareMultilock,
		doc: "own multi-lock (multilock.NewFromPaths) per worker over <base>/a and <base>/b; acquire (measured), check (1 holder), release"},
	"doublebarrier": {impl: implOurs, rounds: true, prepare: prepareDoubleBarrier,
		doc: "round i: double barrier <base>/r<i> with C×G members, one per worker; enter+leave (measured); ops = rounds × C×G, so --ops N runs N/(C×G) rounds"},
	"counter-inc": {impl: implOurs, prepare: prepareCounter,
		doc: "own atomic.Long per worker on <base> (retries without sleep, as Curator's RetryNTimes(MAX, 0)); increment (measured)"},
	"floor": {impl: implGoZK, raw: true, nodes: basePath, prepare: prepareFloor,
		doc: "bare go-zookeeper: create ephemeral-sequential under <base>, list <base>, delete the node (whole cycle measured)"},
	"write": {impl: implGoZK, raw: true, prepare: prepareWrite,
		doc: "bare go-zookeeper: one committed write (setData of 8 bytes on <base>) per op; the physical limit of a hand-over when run 1x1"},
	"gozk-lock": gozkLock,
	"queue-put": {impl: implOurs, nodes: basePath, prepare: prepareQueuePut,
		doc: "own queue.Queue per worker on <base> (no lock path); put a 16-byte item (measured)"},
	"queue-take": {impl: implOurs, nodes: basePath, prepare: prepareQueueTake,
		doc: "<base> filled first with one 16-byte item per op (not counted); own queue.Queue per worker (no lock path); take one item (measured)"},
	cacheInitWorkload: {impl: implOurs, scale: true,
		doc: "a tree of --nodes nodes (<base>, 100 parents, the rest under them, 64 bytes each) built first; one CuratorCache of <base> started: time to Initialized, client heap per node after GC, server watches (wchs), requests per node (also --impl curator); not in --standard"},
	"scale": {impl: implOurs, allowed: 1, scale: true,
		doc: "--waiters goroutines, each with its own mutex.Mutex on <base>/lock, over --clients sessions, acquire, check, release in a loop; once all have queued, the next --ops hand-overs are measured (rate, listings and bytes listed per hand-over, client heap and goroutines per waiter, server watches); not in --standard"},
}

// gozkLock is go-zookeeper's own lock: the workload gozk-lock, and mutex with --impl gozk.
var gozkLock = workload{impl: implGoZK, raw: true, allowed: 1, uncounted: true, nodes: basePath, prepare: prepareGoZKLock,
	doc: "go-zookeeper's own zk.Lock per worker on <base>; lock (measured), check (1 holder), unlock (also: --impl gozk --workload mutex)"}

// curatorNodes are the paths whose children max_nodes sums for --impl curator (Curator's
// layout under the base path; absent: no max_nodes).
var curatorNodes = map[string]func(base string) []string{
	"mutex": basePath, "rwread": basePath, "rwmixed": basePath, "multilock": multilockPaths,
	"semmutex": semaphorePaths, "semaphore": semaphorePaths,
	"queue-put": basePath, "queue-take": basePath,
}

// semaphoreLeases is the maximum of leases of the semaphore workload.
const semaphoreLeases = 3

// The values of --impl, and of the line's "impl".
const (
	implOurs    = "zoocurator"
	implGoZK    = "go-zookeeper"
	implCurator = "curator"
)

// implNames are the names --impl accepts for each implementation.
var implNames = map[string]string{
	"zoocurator": implOurs, "ours": implOurs,
	"curator": implCurator,
	"gozk":    implGoZK, "go-zookeeper": implGoZK,
}

var openACL = zk.WorldACL(zk.PermAll)

func basePath(base string) []string { return []string{base} }

// semaphorePaths: the semaphore's inner lock nodes and its lease nodes.
func semaphorePaths(base string) []string { return []string{base + "/locks", base + "/leases"} }

func multilockPaths(base string) []string { return []string{base + "/a", base + "/b"} }

// lookup returns the workload name of implementation impl (implOurs, implGoZK or
// implCurator). The reference workloads (floor, write, gozk-lock) are bare go-zookeeper
// whatever --impl says, except curator; with --impl gozk, mutex is go-zookeeper's lock.
// A curator workload has no prepare: the JVM runs it (curatortest.StartBench).
func lookup(impl, name string) (workload, error) {
	w, ok := workloads[name]
	if !ok {
		return w, fmt.Errorf("%w: unknown workload %q (known: %s)", errUsage, name, workloadNames())
	}
	switch impl {
	case implOurs:
		return w, nil
	case implGoZK:
		if name == "mutex" {
			return gozkLock, nil
		}
		if w.impl == implGoZK {
			return w, nil
		}
		return w, fmt.Errorf("%w: workload %q has no go-zookeeper implementation (only mutex, floor, write, gozk-lock)", errUsage, name)
	case implCurator:
		if !slices.Contains(curatortest.BenchWorkloads, name) {
			return w, fmt.Errorf("%w: workload %q has no Curator implementation (known: %s)", errUsage, name,
				strings.Join(curatortest.BenchWorkloads, ", "))
		}
		cw := workload{impl: implCurator, allowed: w.allowed, rounds: w.rounds, uncounted: true,
			nodes: curatorNodes[name], doc: w.doc}
		return cw, nil
	}
	return w, fmt.Errorf("%w: unknown implementation %q", errUsage, impl)
}

func workloadNames() string {
	names := make([]string, 0, len(workloads))
	for n := range workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// printWorkloads writes each workload's name and definition, for --help.
func printWorkloads(w io.Writer) {
	for _, name := range strings.Split(workloadNames(), ", ") {
		fmt.Fprintf(w, "  %-14s %s\n", name, workloads[name].doc)
	}
}

// prepareMutex: mutex gives each worker its own mutex.Mutex value; mutex-shared gives
// each session one value that its G goroutines share (the local queue), with
// --local-batch as WithLocalBatch. The lock path is the base path. Per op: acquire
// (measured), check, release.
func prepareMutex(shared bool) func(ctx context.Context, e *env) (func(ci, gi int) (op, error), error) {
	return func(ctx context.Context, e *env) (func(ci, gi int) (op, error), error) {
		var opts []mutex.Option
		if shared && e.cfg.localBatch > 1 {
			opts = append(opts, mutex.WithLocalBatch(e.cfg.localBatch))
		}
		perClient := make([]*mutex.Mutex, len(e.clients))
		if shared {
			for ci, c := range e.clients {
				m, err := mutex.New(c, e.base, opts...)
				if err != nil {
					return nil, err
				}
				perClient[ci] = m
			}
		}
		return func(ci, gi int) (op, error) {
			m := perClient[ci]
			if m == nil {
				var err error
				if m, err = mutex.New(e.clients[ci], e.base, opts...); err != nil {
					return nil, err
				}
			}
			return func(ctx context.Context) (time.Duration, error) {
				t0 := time.Now()
				lease, err := m.Acquire(ctx)
				d := time.Since(t0)
				if err != nil {
					return 0, err
				}
				e.check()
				return d, lease.Release(context.WithoutCancel(ctx))
			}, nil
		}, nil
	}
}

// prepareSemaphore: each worker has its own semaphore value on the base path: with
// leases 0 the semaphore mutex (semmutex), else a semaphore with that many leases. Per
// op: acquire one lease (measured), check, release. The fencing token is not read.
func prepareSemaphore(leases int) func(ctx context.Context, e *env) (func(ci, gi int) (op, error), error) {
	return func(_ context.Context, e *env) (func(ci, gi int) (op, error), error) {
		return func(ci, gi int) (op, error) {
			var acquire func(context.Context) (*semaphore.Lease, error)
			if leases == 0 {
				m, err := semaphore.NewMutex(e.clients[ci], e.base)
				if err != nil {
					return nil, err
				}
				acquire = m.Acquire
			} else {
				s, err := semaphore.New(e.clients[ci], e.base, leases)
				if err != nil {
					return nil, err
				}
				acquire = s.Acquire
			}
			return func(ctx context.Context) (time.Duration, error) {
				t0 := time.Now()
				lease, err := acquire(ctx)
				d := time.Since(t0)
				if err != nil {
					return 0, err
				}
				e.check()
				return d, lease.Release(context.WithoutCancel(ctx))
			}, nil
		}, nil
	}
}

// rwWriteEvery: in rwmixed, a worker's op k (counted from 1) takes the write lock when k
// is a multiple of it.
const rwWriteEvery = 10

// prepareRW: each worker has its own read-write lock value on the base path. rwread:
// read-acquire (measured), release. rwmixed: a worker's 10th, 20th, ... op takes the
// write lock, the others the read lock (measured), with checkRW; the write share is
// exactly 1/10 when each worker's share of --ops is a multiple of 10.
func prepareRW(mixed bool) func(ctx context.Context, e *env) (func(ci, gi int) (op, error), error) {
	return func(_ context.Context, e *env) (func(ci, gi int) (op, error), error) {
		return func(ci, gi int) (op, error) {
			rw, err := rwlock.New(e.clients[ci], e.base)
			if err != nil {
				return nil, err
			}
			read, write := rw.ReadLock(), rw.WriteLock()
			k := 0
			return func(ctx context.Context) (time.Duration, error) {
				k++
				isWrite := mixed && k%rwWriteEvery == 0
				side := read
				if isWrite {
					side = write
				}
				t0 := time.Now()
				lease, err := side.Acquire(ctx)
				d := time.Since(t0)
				if err != nil {
					return 0, err
				}
				if mixed {
					e.checkRW(isWrite)
				}
				return d, lease.Release(context.WithoutCancel(ctx))
			}, nil
		}, nil
	}
}

// prepareMultilock: each worker has its own multi-lock over <base>/a and <base>/b (one
// mutex each, taken in that order). Per op: acquire both (measured), check, release.
func prepareMultilock(_ context.Context, e *env) (func(ci, gi int) (op, error), error) {
	return func(ci, gi int) (op, error) {
		ml, err := multilock.NewFromPaths(e.clients[ci], e.base+"/a", e.base+"/b")
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (time.Duration, error) {
			t0 := time.Now()
			lease, err := ml.Acquire(ctx)
			d := time.Since(t0)
			if err != nil {
				return 0, err
			}
			e.check()
			return d, lease.Release(context.WithoutCancel(ctx))
		}, nil
	}, nil
}

// prepareDoubleBarrier: a worker's op i is its part in round i: a new member (a
// DoubleBarrier value, made before the clock starts) of the double barrier <base>/r<i>
// with C×G members, which enters and then leaves; latency is enter+leave. Every worker
// runs the same number of rounds, so each round has all C×G members, and an op is one
// member's pass through one round (ops = rounds × members).
func prepareDoubleBarrier(_ context.Context, e *env) (func(ci, gi int) (op, error), error) {
	members := e.cfg.clients * e.cfg.perClient
	return func(ci, gi int) (op, error) {
		round := 0
		return func(ctx context.Context) (time.Duration, error) {
			b, err := doublebarrier.New(e.clients[ci], fmt.Sprintf("%s/r%d", e.base, round), members)
			if err != nil {
				return 0, err
			}
			round++
			t0 := time.Now()
			if err := b.Enter(ctx); err != nil {
				return 0, fmt.Errorf("enter: %w", err)
			}
			if err := b.Leave(ctx); err != nil {
				return 0, fmt.Errorf("leave: %w", err)
			}
			return time.Since(t0), nil
		}, nil
	}, nil
}

// prepareFloor: the bare requests of one uncontended lock cycle with go-zookeeper:
// create an ephemeral-sequential node under the base path, list the base path, delete
// the node. Latency is the whole cycle; the three requests are counted as they are sent.
func prepareFloor(_ context.Context, e *env) (func(ci, gi int) (op, error), error) {
	return func(ci, gi int) (op, error) {
		conn := e.conns[ci]
		prefix := e.base + "/lock-"
		return func(context.Context) (time.Duration, error) {
			t0 := time.Now()
			e.rawRequests.Add(1)
			node, err := conn.Create(prefix, nil, zk.FlagEphemeral|zk.FlagSequence, openACL)
			if err != nil {
				return 0, fmt.Errorf("floor: create: %w", err)
			}
			e.rawRequests.Add(1)
			if _, _, err := conn.Children(e.base); err != nil {
				return 0, fmt.Errorf("floor: children: %w", err)
			}
			e.rawRequests.Add(1)
			if err := conn.Delete(node, -1); err != nil {
				return 0, fmt.Errorf("floor: delete: %w", err)
			}
			return time.Since(t0), nil
		}, nil
	}, nil
}

// prepareGoZKLock: go-zookeeper's own zk.Lock on the base path, one per worker. Per op:
// lock (measured), check, unlock. zk.Lock takes no context: a cancelled run ends it by
// closing the sessions.
func prepareGoZKLock(_ context.Context, e *env) (func(ci, gi int) (op, error), error) {
	return func(ci, gi int) (op, error) {
		lk := zk.NewLock(e.conns[ci], e.base, openACL)
		return func(context.Context) (time.Duration, error) {
			t0 := time.Now()
			if err := lk.Lock(); err != nil {
				return 0, fmt.Errorf("gozk-lock: lock: %w", err)
			}
			d := time.Since(t0)
			e.check()
			if err := lk.Unlock(); err != nil {
				return 0, fmt.Errorf("gozk-lock: unlock: %w", err)
			}
			return d, nil
		}, nil
	}, nil
}

// counterRetries is how many optimistic tries an increment of counter-inc gets: no limit
// in practice, as the Curator side's RetryNTimes(Integer.MAX_VALUE, 0).
const counterRetries = 1 << 30

// prepareCounter: each worker has its own atomic.Long on the base path (all workers
// share the one counter node), retrying a lost race at once. Per op: increment
// (measured); an increment that did not succeed stops the run.
func prepareCounter(_ context.Context, e *env) (func(ci, gi int) (op, error), error) {
	policy, err := retry.NewNTimes(counterRetries, 0)
	if err != nil {
		return nil, err
	}
	return func(ci, gi int) (op, error) {
		n, err := atomic.NewLong(e.clients[ci], e.base, atomic.WithRetryPolicy(policy))
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (time.Duration, error) {
			t0 := time.Now()
			r, err := n.Increment(ctx)
			d := time.Since(t0)
			if err != nil {
				return 0, err
			}
			if !r.Succeeded {
				return 0, fmt.Errorf("counter-inc: increment did not succeed after %d tries", counterRetries)
			}
			return d, nil
		}, nil
	}, nil
}

// writeData is what the write workload writes: 8 bytes, as a counter's.
var writeData = make([]byte, 8)

// prepareWrite: the physical limit of a hand-over: one committed write (setData on the
// base path, any version) per op, serial per worker. A contended hand-over needs at
// least one committed write (the holder's delete) and a notification, so it cannot beat
// write 1x1. The request is counted as it is sent.
func prepareWrite(_ context.Context, e *env) (func(ci, gi int) (op, error), error) {
	return func(ci, gi int) (op, error) {
		conn := e.conns[ci]
		return func(context.Context) (time.Duration, error) {
			t0 := time.Now()
			e.rawRequests.Add(1)
			if _, err := conn.Set(e.base, writeData, -1); err != nil {
				return 0, fmt.Errorf("write: set: %w", err)
			}
			return time.Since(t0), nil
		}, nil
	}, nil
}
