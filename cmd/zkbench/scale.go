package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// scaleResult is the line of the scale workload: result's fields, with ops the
// hand-overs measured and clients the sessions the waiters are spread over.
type scaleResult struct {
	result
	Waiters int `json:"waiters"`
	// ListingsPerHandover is the children listings sent per hand-over; each lists the
	// whole queue.
	ListingsPerHandover float64 `json:"listings_per_handover"`
	// NodesListedPerHandover is ListingsPerHandover times the queue's length: names
	// carried per hand-over.
	NodesListedPerHandover float64 `json:"nodes_listed_per_handover"`
	// BytesListedPerHandover estimates the bytes of those names on the wire: each
	// protected lock node's name (_c_<uuid>-lock-<10 digits>, 55 bytes) and its length.
	BytesListedPerHandover float64 `json:"bytes_listed_per_handover"`
	// HeapBytesPerWaiter and GoroutinesPerWaiter are the client's heap in use (after a
	// GC: runtime.MemStats.HeapInuse, whole spans) and goroutines with the queue full,
	// less those before the waiters started, divided by the waiters.
	// LiveHeapBytesPerWaiter is the same for the live objects alone (HeapAlloc): the
	// steadier figure, without the spans' free slots.
	HeapBytesPerWaiter     float64 `json:"heap_bytes_per_waiter"`
	LiveHeapBytesPerWaiter float64 `json:"live_heap_bytes_per_waiter"`
	GoroutinesPerWaiter    float64 `json:"goroutines_per_waiter"`
	// ServerWatches is the server's watch count (mntr zk_watch_count) with the queue full.
	ServerWatches int64 `json:"server_watches"`
	// QueueSeconds is how long the waiters took to queue up (not measured in ops_per_s).
	QueueSeconds float64 `json:"queue_seconds"`
}

// settleWait bounds the wait for the queued waiters to settle before the heap is measured.
const settleWait = 30 * time.Second

// lockNameBytes is the wire size of one protected lock node's name in a listing: a
// 4-byte length and _c_<36-char uuid>-lock-<10 digits>.
const lockNameBytes = 4 + 3 + 36 + 1 + len("lock-") + 10

// executeScale runs the scale workload: --waiters goroutines, each with its own
// mutex.Mutex on <base>/lock, spread round-robin over --clients sessions, each acquiring,
// checking and releasing in a loop (so the queue stays --waiters long). Once every waiter
// has queued, it measures the next --ops hand-overs: their rate, the listings they cost,
// the client's memory per waiter and the server's watches.
func executeScale(ctx context.Context, cfg config, log io.Writer) (scaleResult, error) {
	e := &env{
		cfg:     cfg,
		base:    fmt.Sprintf("/zkbench/%s-%d", cfg.workload, time.Now().UnixNano()),
		allowed: 1,
	}
	lockPath := e.base + "/lock"
	fmt.Fprintf(log, "zkbench: zoocurator scale: %d waiters over %d sessions, %d hand-overs measured, base %s\n",
		cfg.waiters, cfg.clients, cfg.ops, e.base)
	admin, err := zktest.Dial(ctx, cfg.connect, cfg.sessionTimeout)
	if err != nil {
		return scaleResult{}, err
	}
	defer admin.Close()
	if err := createPath(admin, lockPath); err != nil {
		return scaleResult{}, fmt.Errorf("creating %s: %w", lockPath, err)
	}
	defer func() {
		e.closeSessions()
		if err := deleteAll(admin, e.base); err != nil {
			fmt.Fprintf(log, "zkbench: cleaning up %s: %v\n", e.base, err)
		}
	}()
	for i := 0; i < cfg.clients; i++ {
		c, err := framework.Connect(ctx, cfg.connect, framework.WithSessionTimeout(cfg.sessionTimeout),
			framework.WithRequestHook(e.byKind.add))
		if err != nil {
			return scaleResult{}, err
		}
		e.clients = append(e.clients, c)
	}
	heapBase, gorBase := heapAfterGC(), runtime.NumGoroutine()

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		handovers atomic.Int64
		wg        sync.WaitGroup
		errOnce   sync.Once
		firstErr  error
	)
	fail := func(err error) { errOnce.Do(func() { firstErr = err; cancel() }) }
	t0 := time.Now()
	for i := 0; i < cfg.waiters; i++ {
		m, err := mutex.New(e.clients[i%cfg.clients], lockPath)
		if err != nil {
			cancel()
			wg.Wait()
			return scaleResult{}, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				l, err := m.Acquire(rctx)
				if err != nil {
					if rctx.Err() == nil {
						fail(fmt.Errorf("scale waiter %d: %w", i, err))
					}
					return
				}
				e.check()
				handovers.Add(1)
				if err := l.Release(context.WithoutCancel(rctx)); err != nil {
					fail(fmt.Errorf("scale waiter %d: release: %w", i, err))
					return
				}
			}
		}()
	}
	stopAll := func() {
		cancel()
		wg.Wait()
	}
	// Every waiter has queued when the lock has as many children as waiters.
	for {
		_, st, err := admin.Exists(lockPath)
		if err != nil {
			stopAll()
			return scaleResult{}, err
		}
		if st.NumChildren >= int32(cfg.waiters) {
			break
		}
		select {
		case <-rctx.Done():
			stopAll()
			return scaleResult{}, errors.Join(firstErr, rctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	queued := time.Since(t0)
	// Waiters that queued may still be reading the queue (a listing of it each, in flight
	// or just returned): the heap is measured once they wait, that is once the goroutines
	// are down to about one a waiter (a hand-over or two in flight), or after settleWait.
	for settle := time.Now(); time.Since(settle) < settleWait; {
		if runtime.NumGoroutine()-gorBase <= cfg.waiters+cfg.waiters/100+4 {
			break
		}
		select {
		case <-rctx.Done():
			stopAll()
			return scaleResult{}, errors.Join(firstErr, rctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	heapFull, gorFull := heapAfterGC(), runtime.NumGoroutine()
	watches, err := zktest.MntrInt(serverAddrs(cfg.connect)[0], "zk_watch_count")
	if err != nil {
		stopAll()
		return scaleResult{}, err
	}
	kindsBefore := e.byKind.snapshot()
	h0 := handovers.Load()
	t1 := time.Now()
	for handovers.Load()-h0 < int64(cfg.ops) {
		select {
		case <-rctx.Done():
			stopAll()
			return scaleResult{}, errors.Join(firstErr, rctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	seconds := time.Since(t1).Seconds()
	n := handovers.Load() - h0
	kindsAfter := e.byKind.snapshot()
	stopAll()
	if firstErr != nil {
		return scaleResult{}, firstErr
	}
	kinds := perOp(kindsBefore, kindsAfter, int(n))
	listings := kinds["getChildren"] + kinds["getChildren2"]
	res := scaleResult{
		result: result{
			Impl: implOurs, Workload: cfg.workload, Clients: cfg.clients, PerClient: 1,
			Ops: int(n), Seconds: round(seconds, 4), OpsPerS: round(float64(n)/seconds, 1),
			Violations: e.violations.Load(), RequestsByKind: kinds,
		},
		Waiters:                cfg.waiters,
		ListingsPerHandover:    round(listings, 3),
		NodesListedPerHandover: round(listings*float64(cfg.waiters), 1),
		BytesListedPerHandover: round(listings*float64(cfg.waiters*lockNameBytes), 0),
		HeapBytesPerWaiter:     round(float64(int64(heapFull.HeapInuse)-int64(heapBase.HeapInuse))/float64(cfg.waiters), 0),
		LiveHeapBytesPerWaiter: round(float64(int64(heapFull.HeapAlloc)-int64(heapBase.HeapAlloc))/float64(cfg.waiters), 0),
		GoroutinesPerWaiter:    round(float64(gorFull-gorBase)/float64(cfg.waiters), 2),
		ServerWatches:          watches,
		QueueSeconds:           round(queued.Seconds(), 3),
	}
	fmt.Fprintf(log, "zkbench: scale %d waiters: %.1f hand-overs/s, %.2f listings (%.0f bytes) per hand-over, %.0f heap bytes (%.0f live) and %.2f goroutines per waiter, %d server watches; requests per hand-over: %s\n",
		cfg.waiters, res.OpsPerS, res.ListingsPerHandover, res.BytesListedPerHandover, res.HeapBytesPerWaiter,
		res.LiveHeapBytesPerWaiter, res.GoroutinesPerWaiter, res.ServerWatches, byKindText(kinds))
	return res, nil
}

// heapInUse returns the heap in use after a GC.
func heapInUse() uint64 { return heapAfterGC().HeapInuse }

// heapAfterGC returns the heap's figures after a GC.
func heapAfterGC() runtime.MemStats {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms
}
