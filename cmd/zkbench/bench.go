package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/zktest"
)

// result is the JSON line. The first fields are fixed by docs/benchmark.md; the optional ones
// are left out when they do not apply.
type result struct {
	Impl          string   `json:"impl"`
	Workload      string   `json:"workload"`
	Clients       int      `json:"clients"`
	PerClient     int      `json:"per_client"`
	Ops           int      `json:"ops"`
	Seconds       float64  `json:"seconds"`
	OpsPerS       float64  `json:"ops_per_s"`
	P50us         int64    `json:"p50_us"`
	P99us         int64    `json:"p99_us"`
	Violations    int64    `json:"violations"`
	LocalBatch    int      `json:"local_batch,omitempty"`
	Members       int      `json:"members,omitempty"`            // doublebarrier: members of each round (C×G)
	Rounds        int      `json:"rounds,omitempty"`             // doublebarrier: rounds run; ops = rounds × members
	RequestsPerOp *float64 `json:"zk_requests_per_op,omitempty"` // counted by the client as it sends them
	// ServerRequestsPerOp is counted by the server: see the package doc.
	ServerRequestsPerOp *float64 `json:"server_requests_per_op,omitempty"`
	// WarmupOps is how many ops --impl curator ran unreported in the JVM first.
	WarmupOps int `json:"warmup_ops,omitempty"`
	// RequestsByKind splits zk_requests_per_op by ZooKeeper operation (our clients only).
	RequestsByKind map[string]float64 `json:"zk_requests_per_op_by_kind,omitempty"`
	MaxNodes       *int               `json:"max_nodes,omitempty"`
}

func writeLine(w io.Writer, r result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// env is what a workload's prepare and operations use during one run.
type env struct {
	cfg     config
	base    string
	clients []*framework.Client // one per session (zoocurator workloads)
	conns   []*zk.Conn          // one per session (raw workloads)

	allowed     int64
	holders     atomic.Int64
	readers     atomic.Int64 // rwmixed's check
	writers     atomic.Int64 // rwmixed's check
	violations  atomic.Int64
	rawRequests atomic.Uint64 // requests counted by raw workloads as they send them
	byKind      kindCounter   // requests of our clients by operation, from the request hook
}

// kindCounter counts requests by operation name (framework.WithRequestHook).
type kindCounter struct {
	mu sync.Mutex
	m  map[string]uint64
}

func (k *kindCounter) add(op string) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]uint64{}
	}
	k.m[op]++
	k.mu.Unlock()
}

func (k *kindCounter) snapshot() map[string]uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.m)
}

// perOp returns the requests sent between two snapshots by kind, per operation.
func perOp(before, after map[string]uint64, ops int) map[string]float64 {
	m := map[string]float64{}
	for kind, n := range after {
		if d := n - before[kind]; d > 0 {
			m[kind] = round(float64(d)/float64(ops), 3)
		}
	}
	return m
}

// check is WORKLOADS.md's in-process check: count ourselves as a holder, count a
// violation when there are more holders than allowed, and leave.
func (e *env) check() {
	if e.holders.Add(1) > e.allowed {
		e.violations.Add(1)
	}
	e.holders.Add(-1)
}

// checkRW is rwmixed's check: a writer counts a violation when anyone else (reader or
// writer) is inside, a reader when a writer is. Each side registers before it looks at
// the other (sequentially consistent atomics), so of two that overlap at least one sees
// the other.
func (e *env) checkRW(write bool) {
	if write {
		if e.writers.Add(1) > 1 || e.readers.Load() > 0 {
			e.violations.Add(1)
		}
		e.writers.Add(-1)
		return
	}
	e.readers.Add(1)
	if e.writers.Load() > 0 {
		e.violations.Add(1)
	}
	e.readers.Add(-1)
}

func (e *env) requests() uint64 {
	n := e.rawRequests.Load()
	for _, c := range e.clients {
		n += c.Requests()
	}
	return n
}

// closeSessions closes every session; it may be called more than once.
func (e *env) closeSessions() {
	for _, c := range e.clients {
		_ = c.Close()
	}
	for _, c := range e.conns {
		c.Close()
	}
}

// execute runs cfg's workload once and returns its line.
func execute(ctx context.Context, cfg config, log io.Writer) (result, error) {
	w, err := lookup(cfg.impl, cfg.workload)
	if err != nil {
		return result{}, err
	}
	if err := checkWorkload(cfg); err != nil {
		return result{}, err
	}
	workers := cfg.clients * cfg.perClient
	perWorker := cfg.ops / workers
	if perWorker*workers != cfg.ops {
		fmt.Fprintf(log, "zkbench: %d ops do not split evenly over %d workers: running %d (%d each)\n",
			cfg.ops, workers, perWorker*workers, perWorker)
	}
	e := &env{
		cfg:     cfg,
		base:    fmt.Sprintf("/zkbench/%s-%d", cfg.workload, time.Now().UnixNano()),
		allowed: int64(w.allowed),
	}
	fmt.Fprintf(log, "zkbench: %s %s %d×%d, %d ops, base %s\n", w.impl, cfg.workload, cfg.clients, cfg.perClient, perWorker*workers, e.base)

	// The admin session creates the base path, samples max_nodes and cleans up; its
	// requests are not counted.
	admin, err := zktest.Dial(ctx, cfg.connect, cfg.sessionTimeout)
	if err != nil {
		return result{}, err
	}
	defer admin.Close()
	if err := createPath(admin, e.base); err != nil {
		return result{}, fmt.Errorf("creating %s: %w", e.base, err)
	}
	defer func() {
		e.closeSessions()
		if err := deleteAll(admin, e.base); err != nil {
			fmt.Fprintf(log, "zkbench: cleaning up %s: %v\n", e.base, err)
		}
	}()
	server := serverCounter{addrs: serverAddrs(cfg.connect)}
	if w.impl == implCurator {
		return executeCurator(ctx, e, w, admin, server, perWorker, log)
	}

	for i := 0; i < cfg.clients; i++ {
		if w.raw {
			conn, err := zktest.Dial(ctx, cfg.connect, cfg.sessionTimeout)
			if err != nil {
				return result{}, err
			}
			e.conns = append(e.conns, conn)
			continue
		}
		c, err := framework.Connect(ctx, cfg.connect, framework.WithSessionTimeout(cfg.sessionTimeout),
			framework.WithRequestHook(e.byKind.add))
		if err != nil {
			return result{}, err
		}
		e.clients = append(e.clients, c)
	}
	newWorker, err := w.prepare(ctx, e)
	if err != nil {
		return result{}, err
	}
	ops := make([]op, workers)
	for ci := 0; ci < cfg.clients; ci++ {
		for gi := 0; gi < cfg.perClient; gi++ {
			if ops[ci*cfg.perClient+gi], err = newWorker(ci, gi); err != nil {
				return result{}, err
			}
		}
	}

	// The workers wait at the start barrier; the first error stops them all, and closes
	// the sessions so that calls which take no context (go-zookeeper's) return.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		start     = make(chan struct{})
		wg        sync.WaitGroup
		latencies = make([][]time.Duration, workers)
		finished  = make([]time.Time, workers)
		errOnce   sync.Once
		firstErr  error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for i := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, perWorker)
			select {
			case <-start:
			case <-rctx.Done():
				return
			}
			for j := 0; j < perWorker; j++ {
				d, err := ops[i](rctx)
				if err != nil {
					fail(fmt.Errorf("%s worker %d, op %d: %w", cfg.workload, i, j, err))
					return
				}
				lat = append(lat, d)
			}
			latencies[i] = lat
			finished[i] = time.Now()
		}()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	go func() {
		select {
		case <-rctx.Done():
			e.closeSessions()
		case <-allDone:
		}
	}()

	// The server's count is read before the sampler starts and after it stops, so that
	// each of its requests is in the count and can be taken out.
	packetsBefore, err := server.packets()
	if err != nil {
		return result{}, err
	}
	var smp *sampler
	if w.nodes != nil {
		smp = startSampler(admin, w.nodes(e.base), cfg.sampleEvery)
	}
	reqBefore, kindsBefore := e.requests(), e.byKind.snapshot()
	t0 := time.Now()
	close(start)
	<-allDone
	reqAfter, kindsAfter := e.requests(), e.byKind.snapshot()
	maxNodes, sampled := smp.stop()
	if firstErr != nil {
		return result{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	packetsAfter, err := server.packets()
	if err != nil {
		return result{}, err
	}

	last := t0
	var all []time.Duration
	for i := range latencies {
		if finished[i].After(last) {
			last = finished[i]
		}
		all = append(all, latencies[i]...)
	}
	slices.Sort(all)
	seconds := last.Sub(t0).Seconds()
	n := len(all)
	res := result{
		Impl:       w.impl,
		Workload:   cfg.workload,
		Clients:    cfg.clients,
		PerClient:  cfg.perClient,
		Ops:        n,
		Seconds:    round(seconds, 4),
		OpsPerS:    round(float64(n)/seconds, 1),
		P50us:      percentile(all, 0.50).Microseconds(),
		P99us:      percentile(all, 0.99).Microseconds(),
		Violations: e.violations.Load(),
	}
	if cfg.localBatch > 1 {
		res.LocalBatch = cfg.localBatch
	}
	if w.rounds {
		res.Members, res.Rounds = workers, perWorker
	}
	if !w.uncounted {
		rpo := round(float64(reqAfter-reqBefore)/float64(n), 3)
		res.RequestsPerOp = &rpo
	}
	if maxNodes >= 0 {
		res.MaxNodes = &maxNodes
	}
	res.ServerRequestsPerOp = server.perOp(packetsBefore, packetsAfter, sampled, n)
	logLine(log, res)
	if len(e.clients) > 0 {
		res.RequestsByKind = perOp(kindsBefore, kindsAfter, n)
		fmt.Fprintf(log, "zkbench: %s %d×%d: requests per op: %s\n", cfg.workload, cfg.clients, cfg.perClient,
			byKindText(res.RequestsByKind))
	}
	return res, nil
}

// logLine writes a run's figures on the log.
func logLine(log io.Writer, res result) {
	fmt.Fprintf(log, "zkbench: %s %s %d×%d: %.0f ops/s, p50 %d µs, p99 %d µs, %d violations, %s server requests per op\n",
		res.Impl, res.Workload, res.Clients, res.PerClient, res.OpsPerS, res.P50us, res.P99us, res.Violations,
		optFloat(res.ServerRequestsPerOp))
}

// executeCurator runs e's workload on Curator 5.4 in a JVM (curatortest.StartBench): the
// JVM times the run and checks the holders, and prints the line, to which the server's
// count of requests and max_nodes are added here. The warm-up runs on a base path of its
// own, deleted afterwards.
func executeCurator(ctx context.Context, e *env, w workload, admin *zk.Conn, server serverCounter,
	perWorker int, log io.Writer) (result, error) {
	cfg := e.cfg
	workers := cfg.clients * cfg.perClient
	warmup := 0
	if cfg.curatorWarmup > 0 {
		warmup = max(1, cfg.curatorWarmup/workers)
	}
	bc := curatortest.BenchConfig{
		Connect: cfg.connect, SessionTimeout: cfg.sessionTimeout, Workload: cfg.workload,
		Clients: cfg.clients, PerClient: cfg.perClient, OpsPerWorker: perWorker, Base: e.base,
		WarmupOpsPerWorker: warmup, WarmupBase: e.base + "-warmup",
	}
	if warmup > 0 {
		if err := createPath(admin, bc.WarmupBase); err != nil {
			return result{}, fmt.Errorf("creating %s: %w", bc.WarmupBase, err)
		}
		defer func() {
			if err := deleteAll(admin, bc.WarmupBase); err != nil {
				fmt.Fprintf(log, "zkbench: cleaning up %s: %v\n", bc.WarmupBase, err)
			}
		}()
	}
	b, err := curatortest.StartBench(ctx, bc)
	if err != nil {
		return result{}, err
	}
	defer b.Close()
	packetsBefore, err := server.packets()
	if err != nil {
		return result{}, err
	}
	var smp *sampler
	if w.nodes != nil {
		smp = startSampler(admin, w.nodes(e.base), cfg.sampleEvery)
	}
	line, err := b.Run(ctx)
	maxNodes, sampled := smp.stop()
	if err != nil {
		return result{}, err
	}
	packetsAfter, err := server.packets()
	if err != nil {
		return result{}, err
	}
	if err := b.Close(); err != nil {
		return result{}, err
	}
	var res result
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		return result{}, fmt.Errorf("the curator bench's line %q: %w", line, err)
	}
	if res.Ops != workers*perWorker || res.Workload != cfg.workload {
		return result{}, fmt.Errorf("the curator bench's line %q is not the run asked for", line)
	}
	if maxNodes >= 0 {
		res.MaxNodes = &maxNodes
	}
	res.ServerRequestsPerOp = server.perOp(packetsBefore, packetsAfter, sampled, res.Ops)
	res.WarmupOps = warmup * workers
	logLine(log, res)
	return res, nil
}

// serverCounter reads the count of packets received by every server of a connect string.
type serverCounter struct {
	addrs []string
}

// serverAddrs returns the host:port entries of a connect string (its chroot left out).
func serverAddrs(connect string) []string {
	hosts, _, _ := strings.Cut(connect, "/")
	var addrs []string
	for _, a := range strings.Split(hosts, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// packets returns the sum of mntr's zk_packets_received over the servers. A server counts
// the mntr request itself as a packet, so the difference between two readings holds one
// packet of each server more than the run sent: see perOp.
func (s serverCounter) packets() (int64, error) {
	var sum int64
	for _, a := range s.addrs {
		n, err := zktest.MntrInt(a, "zk_packets_received")
		if err != nil {
			return 0, fmt.Errorf("reading the server's request count: %w", err)
		}
		sum += n
	}
	return sum, nil
}

// perOp is the servers' count of requests between two readings, less the sampler's own
// requests and the second reading's mntr requests, per op.
func (s serverCounter) perOp(before, after, sampled int64, ops int) *float64 {
	if ops <= 0 {
		return nil
	}
	v := round(float64(after-before-sampled-int64(len(s.addrs)))/float64(ops), 3)
	return &v
}

// percentile returns the nearest-rank percentile p of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func round(x float64, digits int) float64 {
	f := math.Pow(10, float64(digits))
	return math.Round(x*f) / f
}

// sampler counts the children of some paths every few milliseconds and keeps the
// largest sum seen, and how many requests that took.
type sampler struct {
	quit     chan struct{}
	done     chan struct{}
	max      int
	requests int64
}

func startSampler(conn *zk.Conn, paths []string, every time.Duration) *sampler {
	s := &sampler{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			sum := 0
			for _, p := range paths {
				s.requests++
				if _, st, err := conn.Children(p); err == nil {
					sum += int(st.NumChildren)
				}
			}
			s.max = max(s.max, sum)
			select {
			case <-s.quit:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the largest count and the requests it sent, once
// every one is answered. A nil sampler returns -1 and 0.
func (s *sampler) stop() (maxNodes int, requests int64) {
	if s == nil {
		return -1, 0
	}
	close(s.quit)
	<-s.done
	return s.max, s.requests
}

// createPath creates path and its missing parents as persistent nodes.
func createPath(conn *zk.Conn, path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		_, err := conn.Create(path[:i], nil, 0, openACL)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// deleteAll deletes path and everything under it, retrying a little when nodes appear
// underneath meanwhile (ephemerals of sessions that are still closing).
func deleteAll(conn *zk.Conn, path string) error {
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		var kids []string
		kids, _, err = conn.Children(path)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := deleteAll(conn, path+"/"+k); err != nil {
				return err
			}
		}
		err = conn.Delete(path, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if !errors.Is(err, zk.ErrNotEmpty) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}
