package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

// The cache-init workload: a tree of --nodes nodes under the base path (the
// base itself, cacheInitParents parents <base>/pNNNN, the rest spread evenly over them as
// <base>/pNNNN/cNNNNNN, cacheInitDataBytes bytes of data each) is built first, unmeasured;
// then one session's CuratorCache of the base is started and the time to Initialized
// measured, with the client's heap per cached node after a GC, the server's watches and
// the requests sent per node.
const (
	cacheInitWorkload  = "cache-init"
	cacheInitParents   = 100
	cacheInitDataBytes = 64
	// curatorPendingLimit is where Curator 5.4's CuratorCache stops (CURATOR-690, fixed
	// in 5.6): its initial build counts outstanding reads in a 16-bit field.
	curatorPendingLimit = 65535
	// cacheInitUpdates is how many nodes' data are set once the cache is initialized, to
	// measure how soon it hears them (updates_heard_seconds).
	cacheInitUpdates = 1000
	// cacheInitMarker starts the data of those updates (the tree's data starts "abc").
	cacheInitMarker = "updated"
	// updatesHeardTimeout bounds the wait for the updates to be heard.
	updatesHeardTimeout = 5 * time.Minute
)

// updateTargets returns the nodes cache-init updates: cacheInitUpdates of paths spread
// evenly over them (every path when there are fewer).
func updateTargets(paths []string) []string {
	n := min(cacheInitUpdates, len(paths))
	out := make([]string, n)
	for i := range n {
		out[i] = paths[i*len(paths)/n]
	}
	return out
}

// updateData is the data cache-init's updates set: cacheInitMarker, then the tree's
// pattern, cacheInitDataBytes in all.
func updateData() []byte {
	data := make([]byte, cacheInitDataBytes)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	copy(data, cacheInitMarker)
	return data
}

// setAll sets the data of targets, 64 requests at a time.
func setAll(ctx context.Context, conn *zk.Conn, targets []string) error {
	data := updateData()
	return parallelDo(ctx, len(targets), func(i int) error {
		_, err := conn.Set(targets[i], data, -1)
		return err
	})
}

// ourUpdatesHeard measures how soon cc hears the updates of targets: from the first
// setData to the last path heard (NodeChanged or NodeCreated with the update's data).
func ourUpdatesHeard(ctx context.Context, conn *zk.Conn, cc *cache.CuratorCache, targets []string) (time.Duration, error) {
	var (
		mu    sync.Mutex
		heard = make(map[string]bool, len(targets))
		done  = make(chan struct{})
	)
	want := make(map[string]bool, len(targets))
	for _, p := range targets {
		want[p] = true
	}
	remove := cc.AddListener(func(ev cache.Event) {
		if (ev.Type != cache.NodeChanged && ev.Type != cache.NodeCreated) || ev.Data == nil ||
			!want[ev.Data.Path] || !bytes.HasPrefix(ev.Data.Data, []byte(cacheInitMarker)) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !heard[ev.Data.Path] {
			heard[ev.Data.Path] = true
			if len(heard) == len(targets) {
				close(done)
			}
		}
	})
	defer remove()
	t0 := time.Now()
	if err := setAll(ctx, conn, targets); err != nil {
		return 0, err
	}
	timer := time.NewTimer(updatesHeardTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return time.Since(t0), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-timer.C:
		mu.Lock()
		defer mu.Unlock()
		return 0, fmt.Errorf("the cache heard %d of %d updates within %v", len(heard), len(targets), updatesHeardTimeout)
	}
}

// cacheInitResult is the line of cache-init: result's fields with ops the nodes cached,
// seconds (and p50_us, p99_us: the one operation measured) the time from the cache's
// start to Initialized, ops_per_s nodes per second.
type cacheInitResult struct {
	result
	Nodes int `json:"nodes"`
	// NodesCached is what the cache held at Initialized (Curator 5.4 stops at
	// curatorPendingLimit pending reads: fewer than Nodes past about 65 535 nodes).
	NodesCached int `json:"nodes_cached"`
	// HeapBytesPerNode is the client's heap in use after a GC with the cache initialized,
	// less that before the cache started, per cached node; HeapBytesPerNodeBeyondEntry
	// is that less the node's own path, data and Stat (entryBytes).
	HeapBytesPerNode            float64 `json:"heap_bytes_per_node"`
	HeapBytesPerNodeBeyondEntry float64 `json:"heap_bytes_per_node_beyond_entry"`
	// GoroutinesPerNode: the client's goroutines with the cache initialized, less those
	// before, per cached node (zoocurator only).
	GoroutinesPerNode float64 `json:"goroutines_per_node,omitempty"`
	// ServerWatches is the server's watch count with the cache initialized (mntr's
	// zk_watch_count: data, exists and child watches); ServerDataWatches the data and
	// exists watches alone (the four-letter word wchs, "Total watches", counts only those).
	ServerWatches     int64 `json:"server_watches"`
	ServerDataWatches int64 `json:"server_data_watches"`
	// RequestsPerNode is the packets the server received while the cache initialized
	// (mntr's zk_packets_received before and after, less the second reading's; pings
	// included), per cached node: the same count for every implementation.
	// ZKRequestsPerNode is the requests the client counted as it sent them (ours only).
	RequestsPerNode   float64  `json:"requests_per_node"`
	ZKRequestsPerNode *float64 `json:"zk_requests_per_node,omitempty"`
	// UpdatesHeardSeconds is the time from the first of cacheInitUpdates setData (on
	// nodes spread over the tree; all of them when it has fewer) to the cache having heard
	// every one of them (as a change, or as a creation where Curator 5.4 had not cached the
	// node).
	UpdatesHeardSeconds float64 `json:"updates_heard_seconds"`
	// Note says what limits a result (Curator 5.4's CURATOR-690).
	Note string `json:"note,omitempty"`
}

// entryBytes is the size of what a cached node must hold: its path, its data and its Stat.
func entryBytes(pathLen int) int { return pathLen + cacheInitDataBytes + statBytes }

// statBytes is the size of a ZooKeeper Stat (go-zookeeper's zk.Stat: 6 int64, 5 int32).
const statBytes = 6*8 + 5*4 + 4 // padded to 8

// cacheInitTree returns the paths of the tree of n nodes under base, parents first.
func cacheInitTree(base string, n int) []string {
	paths := []string{base}
	parents := min(cacheInitParents, n-1)
	if parents <= 0 {
		return paths
	}
	for p := range parents {
		paths = append(paths, fmt.Sprintf("%s/p%04d", base, p))
	}
	rest := n - 1 - parents
	for i := range rest {
		paths = append(paths, fmt.Sprintf("%s/p%04d/c%06d", base, i%parents, i/parents))
	}
	return paths
}

// buildTree creates paths (parents before children) on conn, 64 requests at a time.
func buildTree(ctx context.Context, conn *zk.Conn, paths []string, log io.Writer) error {
	data := make([]byte, cacheInitDataBytes)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	if err := createPath(conn, framework.ParentPath(paths[0])); err != nil {
		return err
	}
	// Levels: the base, its parents, the rest.
	levels := [][]string{paths[:1]}
	parents := min(cacheInitParents, len(paths)-1)
	if parents > 0 {
		levels = append(levels, paths[1:1+parents], paths[1+parents:])
	}
	t0 := time.Now()
	for _, level := range levels {
		if err := parallelDo(ctx, len(level), func(i int) error {
			_, err := conn.Create(level[i], data, 0, openACL)
			return err
		}); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "zkbench: cache-init: built %d nodes in %.1f s\n", len(paths), time.Since(t0).Seconds())
	return nil
}

// deleteTree deletes paths, children first, 64 requests at a time.
func deleteTree(ctx context.Context, conn *zk.Conn, paths []string) error {
	parents := min(cacheInitParents, len(paths)-1)
	levels := [][]string{}
	if parents > 0 {
		levels = append(levels, paths[1+parents:], paths[1:1+parents])
	}
	levels = append(levels, paths[:1])
	for _, level := range levels {
		if err := parallelDo(ctx, len(level), func(i int) error {
			err := conn.Delete(level[i], -1)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func parallelDo(ctx context.Context, n int, fn func(int) error) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		next  = make(chan int)
	)
	for range min(n, 64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	var err error
	for i := 0; i < n && err == nil; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	close(next)
	wg.Wait()
	if err != nil {
		return err
	}
	return first
}

// serverDataWatches reads the server's wchs: "N connections watching M paths\nTotal
// watches:K", which counts the data and exists watches only.
func serverDataWatches(addr string) (watches int64, err error) {
	out, err := zktest.FourLetterWord(addr, "wchs", 5*time.Second)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "Total watches:"); ok {
			watches, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("wchs %s: unexpected answer %q", addr, out)
			}
			return watches, nil
		}
	}
	return 0, fmt.Errorf("wchs %s: unexpected answer %q", addr, out)
}

// executeCacheInit runs cache-init on cfg.impl.
func executeCacheInit(ctx context.Context, cfg config, log io.Writer) (cacheInitResult, error) {
	e := &env{cfg: cfg, base: fmt.Sprintf("/zkbench/%s-%d", cfg.workload, time.Now().UnixNano())}
	paths := cacheInitTree(e.base, cfg.nodes)
	fmt.Fprintf(log, "zkbench: %s cache-init: %d nodes under %s\n", cfg.impl, len(paths), e.base)
	admin, err := zktest.Dial(ctx, cfg.connect, cfg.sessionTimeout)
	if err != nil {
		return cacheInitResult{}, err
	}
	defer admin.Close()
	defer func() {
		if err := deleteTree(context.WithoutCancel(ctx), admin, paths); err != nil {
			fmt.Fprintf(log, "zkbench: cleaning up %s: %v\n", e.base, err)
		}
	}()
	if err := buildTree(ctx, admin, paths, log); err != nil {
		return cacheInitResult{}, fmt.Errorf("building the tree: %w", err)
	}
	entry := 0
	for _, p := range paths {
		entry += entryBytes(len(p))
	}
	res := cacheInitResult{Nodes: len(paths)}
	res.Impl, res.Workload, res.Clients, res.PerClient = cfg.impl, cfg.workload, 1, 1
	addr := serverAddrs(cfg.connect)[0]
	sc := serverCounter{addrs: serverAddrs(cfg.connect)}
	var packets0, packets1 int64
	targets := updateTargets(paths)
	// updatesHeard runs once the rest is measured (the cache still up).
	var updatesHeard func() (time.Duration, error)
	switch cfg.impl {
	case implOurs:
		c, err := framework.Connect(ctx, cfg.connect, framework.WithSessionTimeout(cfg.sessionTimeout),
			framework.WithRequestHook(e.byKind.add))
		if err != nil {
			return res, err
		}
		defer c.Close()
		e.clients = append(e.clients, c)
		heapBase, gorBase := heapInUse(), runtime.NumGoroutine()
		before := e.requests()
		if packets0, err = sc.packets(); err != nil {
			return res, err
		}
		cc, err := cache.NewCuratorCache(c, e.base)
		if err != nil {
			return res, err
		}
		defer cc.Close()
		init := make(chan struct{})
		cc.AddListener(func(ev cache.Event) {
			if ev.Type == cache.Initialized {
				close(init)
			}
		})
		t0 := time.Now()
		if err := cc.Start(ctx); err != nil {
			return res, err
		}
		select {
		case <-init:
		case <-ctx.Done():
			return res, ctx.Err()
		}
		seconds := time.Since(t0).Seconds()
		requests := e.requests() - before
		if packets1, err = sc.packets(); err != nil {
			return res, err
		}
		heapFull, gorFull := heapInUse(), runtime.NumGoroutine()
		res.NodesCached = cc.Size()
		res.Seconds = round(seconds, 3)
		res.HeapBytesPerNode = round(float64(int64(heapFull)-int64(heapBase))/float64(res.NodesCached), 0)
		res.HeapBytesPerNodeBeyondEntry = round((float64(int64(heapFull)-int64(heapBase))-float64(entry))/float64(res.NodesCached), 0)
		res.GoroutinesPerNode = round(float64(gorFull-gorBase)/float64(res.NodesCached), 6)
		zr := round(float64(requests)/float64(res.NodesCached), 3)
		res.ZKRequestsPerNode = &zr
		updatesHeard = func() (time.Duration, error) { return ourUpdatesHeard(ctx, admin, cc, targets) }
	case implCurator:
		cr, err := runCuratorCacheInit(ctx, cfg, e.base, log, func() (err error) {
			packets0, err = sc.packets()
			return err
		})
		if err != nil {
			return res, err
		}
		defer cr.close()
		if packets1, err = sc.packets(); err != nil {
			return res, err
		}
		res.NodesCached = cr.cached
		res.Seconds = round(cr.seconds, 3)
		res.HeapBytesPerNode = round(float64(cr.heapBytes)/float64(max(cr.cached, 1)), 0)
		res.HeapBytesPerNodeBeyondEntry = round((float64(cr.heapBytes)-float64(entry)*float64(cr.cached)/float64(len(paths)))/float64(max(cr.cached, 1)), 0)
		updatesHeard = func() (time.Duration, error) {
			return cr.updates(ctx, len(targets), cacheInitMarker, func() error { return setAll(ctx, admin, targets) })
		}
		res.Note = fmt.Sprintf("Curator 5.4's CuratorCache stops at %d pending reads (CURATOR-690, fixed in 5.6): past that it reports Initialized with the nodes read so far", curatorPendingLimit)
	default:
		return res, fmt.Errorf("%w: cache-init runs on zoocurator or curator", errUsage)
	}
	if res.ServerWatches, err = zktest.MntrInt(addr, "zk_watch_count"); err != nil {
		return res, err
	}
	if res.ServerDataWatches, err = serverDataWatches(addr); err != nil {
		return res, err
	}
	if p := sc.perOp(packets0, packets1, 0, max(res.NodesCached, 1)); p != nil {
		res.RequestsPerNode = *p
	}
	heard, err := updatesHeard()
	if err != nil {
		return res, fmt.Errorf("updates heard: %w", err)
	}
	res.UpdatesHeardSeconds = round(heard.Seconds(), 3)
	res.Ops = res.NodesCached
	if res.Seconds > 0 {
		res.OpsPerS = round(float64(res.NodesCached)/res.Seconds, 1)
	}
	res.P50us = int64(res.Seconds * 1e6)
	res.P99us = res.P50us
	fmt.Fprintf(log, "zkbench: %s cache-init %d nodes: Initialized with %d in %.2f s, %.0f heap bytes per node (%.0f beyond path, data and Stat), %d server watches (%d data), %.2f requests per node, %d updates heard in %.2f s\n",
		cfg.impl, res.Nodes, res.NodesCached, res.Seconds, res.HeapBytesPerNode, res.HeapBytesPerNodeBeyondEntry,
		res.ServerWatches, res.ServerDataWatches, res.RequestsPerNode, len(targets), res.UpdatesHeardSeconds)
	if res.Note != "" {
		fmt.Fprintln(log, "zkbench:", res.Note)
	}
	return res, nil
}
