package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/recipes/mutex"
)

// errNotAvailable is returned for a workload of WORKLOADS.md whose recipe has not landed.
var errNotAvailable = errors.New("not available yet")

// op is one operation of one worker. It returns the latency to report (the acquire, or
// the whole cycle, as the workload defines) and stops the run with an error.
type op func(ctx context.Context) (time.Duration, error)

// workload is one named benchmark of WORKLOADS.md. Adding one is writing its prepare
// function and an entry in workloads.
type workload struct {
	impl string // "zoocurator", or "go-zookeeper" for the reference workloads
	// raw: the sessions are bare go-zookeeper connections (env.conns), not framework
	// clients (env.clients).
	raw bool
	// allowed is how many holders the check allows at once (0: the workload has no check).
	allowed int
	// uncounted: zk_requests_per_op cannot be counted exactly (the requests happen inside
	// a library that does not report them) and is left out rather than guessed.
	uncounted bool
	// nodes returns the paths whose children max_nodes sums (nil: no max_nodes).
	nodes func(base string) []string
	// prepare runs before the start barrier: it builds what the workers share and returns
	// the factory of each worker's operation (session index ci, goroutine index gi).
	prepare func(ctx context.Context, e *env) (func(ci, gi int) (op, error), error)
}

// workloads holds every workload of WORKLOADS.md; those without prepare are not
// available yet.
var workloads = map[string]workload{
	"mutex":         {impl: implOurs, allowed: 1, nodes: basePath, prepare: prepareMutex(false)},
	"mutex-shared":  {impl: implOurs, allowed: 1, nodes: basePath, prepare: prepareMutex(true)},
	"floor":         {impl: implGoZK, raw: true, nodes: basePath, prepare: prepareFloor},
	"gozk-lock":     {impl: implGoZK, raw: true, allowed: 1, uncounted: true, nodes: basePath, prepare: prepareGoZKLock},
	"semmutex":      {impl: implOurs},
	"semaphore":     {impl: implOurs},
	"rwread":        {impl: implOurs},
	"rwmixed":       {impl: implOurs},
	"multilock":     {impl: implOurs},
	"doublebarrier": {impl: implOurs},
}

const (
	implOurs = "zoocurator"
	implGoZK = "go-zookeeper"
)

var openACL = zk.WorldACL(zk.PermAll)

func basePath(base string) []string { return []string{base} }

func lookup(name string) (workload, error) {
	w, ok := workloads[name]
	if !ok {
		return w, fmt.Errorf("%w: unknown workload %q (known: %s)", errUsage, name, workloadNames())
	}
	if w.prepare == nil {
		return w, fmt.Errorf("workload %s %w: its recipe has not landed", name, errNotAvailable)
	}
	return w, nil
}

func workloadNames() string {
	names := make([]string, 0, len(workloads))
	for n := range workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
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
