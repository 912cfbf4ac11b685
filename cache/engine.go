package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/retry"
)

// kind is what the engine saw; each cache maps it to its own EventType (0: not reported).
type kind int

const (
	kAdded kind = iota
	kUpdated
	kRemoved
	kInitialized
	kSuspended
	kReconnected
	kLost
	kUnreadable
	numKinds
)

// engineConfig is what distinguishes the three caches.
type engineConfig struct {
	name     string // "node cache", ... for logs and errors
	client   *framework.Client
	root     string
	opts     options
	emitRoot bool // report events for the root itself (not for PathChildrenCache)
	types    [numKinds]EventType
}

// node is one cached znode.
type node struct {
	data []byte
	stat framework.Stat
	kids map[string]struct{} // names of cached children; nil when none
	// listed is the pzxid of the listing of the children that kids follows (0: not
	// listed yet). Every child that listing showed was created at or before it: a node
	// read under this path with a later czxid was created after the listing, under this
	// node or under another one that replaced it since.
	listed int64
}

// dirt says what to read again for a path.
type dirt uint8

const (
	dirtyData dirt = 1 << iota
	dirtyKids
	// dirtyFresh marks a child its parent listed that is not cached yet: it stays
	// relevant until it was read, found gone or reported Unreadable.
	dirtyFresh
	dirtyAll = dirtyData | dirtyKids
)

// input is something that happened outside the engine goroutine: a watch fired or the
// connection state changed.
type input struct {
	pw    *pathWatch // the path whose watch fired; nil: a state change
	kind  watchKind
	fw    *framework.Watch
	ev    framework.Event
	state framework.State
}

// Retry delays after a failed read.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// recheckInterval is how often the cache reads again the nodes it reported Unreadable:
// a node made readable by setACL fires no watch, and the server tells no watch of a
// change to a node its client may not read (and drops that watch).
const recheckInterval = 10 * time.Second

// fetchParallelism bounds the reads one batch has in flight.
const fetchParallelism = 32

// engine is the cache machinery shared by the three caches: one goroutine (run) owns the
// cached tree, reads from ZooKeeper and diffs; watches and state changes reach it through
// the input queue; events leave it through the dispatcher.
type engine struct {
	cfg  engineConfig
	log  *slog.Logger
	disp *dispatcher

	mu    sync.RWMutex
	nodes map[string]*node

	life     sync.Mutex
	started  bool
	closed   bool
	stop     chan struct{}
	done     chan struct{} // closed when run returns
	initDone chan struct{}
	cancel   context.CancelFunc
	unsub    func()
	wg       sync.WaitGroup // the run goroutine
	// The dispatcher runs the listeners on a goroutine of gs, so that a listener may
	// close its own cache: Close does not wait for the goroutine it is called on.
	gs        *framework.Goroutines
	dispDone  chan struct{} // closed when the dispatcher returns; nil before start
	closeDone chan struct{} // closed when the first close has done its work

	imu  sync.Mutex
	inq  []input
	isig chan struct{}

	// Owned by the run goroutine.
	armed       map[string]*pathWatch // by path: the watches armed there
	dirty       map[string]dirt
	unreadable  map[string]string // path -> error reported as Unreadable
	initialized bool
	backoff     time.Duration
	retry       *time.Timer
	retrying    bool
	recheck     *time.Timer // while some node is unreadable
	rechecking  bool
}

func newEngine(cfg engineConfig) (*engine, error) {
	if cfg.client == nil {
		return nil, errorf("nil client")
	}
	if err := framework.ValidatePath(cfg.root); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	if len(cfg.opts.errs) > 0 {
		return nil, errors.Join(cfg.opts.errs...)
	}
	switch cfg.opts.mode {
	case NormalStart, BuildInitialCache, PostInitializedEvent:
	default:
		return nil, errorf("unknown start mode %d", int(cfg.opts.mode))
	}
	log := cfg.client.Logger()
	return &engine{
		cfg:        cfg,
		log:        log,
		disp:       newDispatcher(log),
		nodes:      map[string]*node{},
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		initDone:   make(chan struct{}),
		gs:         framework.NewGoroutines(),
		closeDone:  make(chan struct{}),
		isig:       make(chan struct{}, 1),
		armed:      map[string]*pathWatch{},
		dirty:      map[string]dirt{},
		unreadable: map[string]string{},
	}, nil
}

func (e *engine) start(ctx context.Context) error {
	e.life.Lock()
	if e.closed {
		e.life.Unlock()
		return ErrClosed
	}
	if e.started {
		e.life.Unlock()
		return fmt.Errorf("%w: %s of %s", ErrAlreadyStarted, e.cfg.name, e.cfg.root)
	}
	e.started = true
	rctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	c := e.cfg.client
	e.unsub = c.AddListener(e.onState)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer close(e.done)
		e.run(rctx)
	}()
	dispDone := make(chan struct{})
	e.dispDone = dispDone
	e.gs.Go(func() {
		defer close(dispDone)
		e.disp.run(e.stop, e.done)
	})
	e.life.Unlock()

	if e.cfg.opts.mode != BuildInitialCache {
		return nil
	}
	select {
	case <-e.initDone:
		return nil
	case <-ctx.Done():
		// Closed without waiting for a listener still busy with an event of the
		// build: its goroutine ends when that call returns.
		_ = e.shut(false)
		return fmt.Errorf("cache: building the initial %s of %s: %w", e.cfg.name, e.cfg.root, ctx.Err())
	case <-e.stop:
		return ErrClosed
	case <-e.done:
		return fmt.Errorf("cache: building the initial %s of %s: %w", e.cfg.name, e.cfg.root, framework.ErrClosed)
	}
}

// close stops the cache. Called from a listener (on the dispatcher's goroutine) it does
// not wait for the dispatcher, which returns once that listener does; from anywhere else,
// every close waits for the first one's work and for the dispatcher.
func (e *engine) close() error { return e.shut(true) }

// shut stops the cache; with waitListeners false it does not wait for the dispatcher
// (a listener busy in a call of its own), which returns once that call does and calls
// no listener after.
func (e *engine) shut(waitListeners bool) error {
	e.life.Lock()
	if e.closed {
		closeDone, dispDone := e.closeDone, e.dispDone
		e.life.Unlock()
		if !e.gs.Inside() {
			<-closeDone
			if dispDone != nil {
				<-dispDone
			}
		}
		return nil
	}
	e.closed = true
	close(e.stop)
	if e.cancel != nil {
		e.cancel()
	}
	unsub, dispDone := e.unsub, e.dispDone
	e.life.Unlock()
	defer close(e.closeDone)
	if unsub != nil {
		unsub()
	}
	e.wg.Wait()
	// The run goroutine returned: nothing arms a watch any more. A watch that may never
	// fire must not hold the cache (its handler points to the engine).
	for p, pw := range e.armed {
		for k, fw := range pw.w {
			if fw != nil {
				fw.Unhandle(pw.handler(watchKind(k)))
			}
		}
		delete(e.armed, p)
	}
	if dispDone != nil && waitListeners && !e.gs.Inside() {
		<-dispDone
	}
	if !e.cfg.opts.keep {
		e.mu.Lock()
		e.nodes = map[string]*node{}
		e.mu.Unlock()
	}
	return nil
}

func (e *engine) addListener(fn func(Event)) func() {
	e.life.Lock()
	closed := e.closed
	e.life.Unlock()
	if closed {
		return func() {}
	}
	return e.disp.add(fn)
}

// onState runs on the client's listener goroutine.
func (e *engine) onState(s framework.State) {
	var k kind
	switch s {
	case framework.Suspended:
		k = kSuspended
	case framework.Lost:
		k = kLost
	case framework.Reconnected:
		k = kReconnected
	case framework.Connected:
		// The first connection (possibly made before Start: the client may deliver it
		// late). Nothing to report; reading everything again is harmless.
		e.pushInput(input{state: s})
		return
	default:
		return
	}
	if t := e.cfg.types[k]; t != 0 && !isClosed(e.stop) {
		e.disp.push(Event{Type: t})
	}
	e.pushInput(input{state: s})
}

func (e *engine) pushInput(in input) {
	e.imu.Lock()
	e.inq = append(e.inq, in)
	e.imu.Unlock()
	select {
	case e.isig <- struct{}{}:
	default:
	}
}

func (e *engine) run(ctx context.Context) {
	defer func() {
		if e.retry != nil {
			e.retry.Stop()
		}
		if e.recheck != nil {
			e.recheck.Stop()
		}
	}()
	e.dirty[e.cfg.root] = dirtyAll
	for {
		e.drain()
		if ctx.Err() != nil {
			return
		}
		if len(e.dirty) > 0 && !e.retrying {
			if err := e.pass(ctx); err != nil {
				if ctx.Err() != nil || errors.Is(err, framework.ErrClosed) {
					return
				}
				e.scheduleRetry(err)
			} else {
				e.backoff = 0
			}
			continue
		}
		if len(e.dirty) == 0 && !e.initialized {
			e.initialized = true
			if e.cfg.opts.mode == PostInitializedEvent {
				e.emitType(e.cfg.types[kInitialized], nil, nil)
			}
			close(e.initDone)
		}
		var retryC, recheckC <-chan time.Time
		if e.retrying {
			retryC = e.retry.C
		}
		if len(e.unreadable) > 0 {
			if !e.rechecking {
				e.rechecking = true
				if e.recheck == nil {
					e.recheck = time.NewTimer(recheckInterval)
				} else {
					e.recheck.Reset(recheckInterval)
				}
			}
			recheckC = e.recheck.C
		}
		select {
		case <-ctx.Done():
			return
		case <-e.cfg.client.Done():
			return
		case <-e.isig:
		case <-retryC:
			e.retrying = false
		case <-recheckC:
			e.rechecking = false
			e.recheckUnreadable()
		}
	}
}

func (e *engine) scheduleRetry(err error) {
	if e.backoff == 0 {
		e.backoff = minBackoff
	} else {
		e.backoff = min(2*e.backoff, maxBackoff)
	}
	e.log.Debug("read failed; retrying", "component", "cache", "cache", e.cfg.name, "path", e.cfg.root, "in", e.backoff, "err", err)
	if e.retry == nil {
		e.retry = time.NewTimer(e.backoff)
	} else {
		e.retry.Reset(e.backoff)
	}
	e.retrying = true
}

// drain takes what happened since the last call and marks what to read again.
func (e *engine) drain() {
	e.imu.Lock()
	q := e.inq
	e.inq = nil
	e.imu.Unlock()
	for _, in := range q {
		if pw := in.pw; pw != nil {
			if e.armed[pw.path] == pw && pw.w[in.kind] == in.fw {
				pw.w[in.kind] = nil
				if pw.idle() {
					delete(e.armed, pw.path)
				}
			}
			d := dirtyAll
			if in.ev.Type != zk.EventNotWatching {
				switch in.kind {
				case dataWatch:
					d = dirtyData
				case childWatch:
					d = dirtyKids
				}
			}
			e.markDirty(pw.path, d)
			continue
		}
		switch in.state {
		case framework.Connected, framework.Reconnected:
			// Read everything again: what changed while we were away is reported now.
			e.markDirty(e.cfg.root, dirtyAll)
			e.mu.RLock()
			for p := range e.nodes {
				e.dirty[p] |= dirtyAll
			}
			e.mu.RUnlock()
			clear(e.unreadable) // read again, and report again what still cannot be read
			e.backoff = 0
			if e.retrying {
				e.retry.Stop()
				e.retrying = false
			}
		}
	}
}

func (e *engine) markDirty(p string, d dirt) { e.dirty[p] |= d }

// item is one node to read in a pass.
type item struct {
	path  string
	what  dirt
	fresh bool // a child just listed, not cached yet
}

// pass reads every dirty path again, shallowest first. Paths whose reads fail stay dirty;
// the first such error is returned.
func (e *engine) pass(ctx context.Context) error {
	items := make([]item, 0, len(e.dirty))
	for p, d := range e.dirty {
		items = append(items, item{path: p, what: d &^ dirtyFresh, fresh: d&dirtyFresh != 0})
	}
	clear(e.dirty)
	slices.SortFunc(items, func(a, b item) int {
		if da, db := strings.Count(a.path, "/"), strings.Count(b.path, "/"); da != db {
			return da - db
		}
		return strings.Compare(a.path, b.path)
	})
	return e.sync(ctx, items)
}

// relevant reports whether the engine should read it: the root, a cached node, or a
// freshly listed child whose parent is still cached.
func (e *engine) relevant(it item) bool {
	if it.path == e.cfg.root || e.cached(it.path) {
		return true
	}
	return it.fresh && e.cached(framework.ParentPath(it.path))
}

func (e *engine) cached(p string) bool {
	return e.nodes[p] != nil // only the run goroutine writes nodes: no lock needed to read
}

func (e *engine) depth(p string) int {
	if p == e.cfg.root {
		return 0
	}
	rel := p
	if e.cfg.root != "/" {
		rel = p[len(e.cfg.root):]
	}
	return strings.Count(rel, "/")
}

func (e *engine) traverse(p string) bool {
	if e.depth(p) >= e.cfg.opts.maxDepth {
		return false
	}
	return e.cfg.opts.selector == nil || e.cfg.opts.selector.TraverseChildren(p)
}

type dataRes struct {
	data []byte
	stat *framework.Stat
	err  error
}

type kidsRes struct {
	names []string
	stat  *framework.Stat
	err   error
}

// sync reads items (data, then children), applies what it read, and goes on with the
// children it found, level by level. A read that failed for a reason retrying does not
// cure (NoAuth) is reported Unreadable and not retried; any other failure keeps the
// path dirty (a fresh child stays fresh), so that Initialized waits for it.
func (e *engine) sync(ctx context.Context, items []item) error {
	var firstErr error
	fail := func(p string, d dirt, err error) {
		if permanent(err) {
			e.unreadableNode(p, err)
			return
		}
		e.markDirty(p, d)
		if firstErr == nil {
			firstErr = fmt.Errorf("cache: %s: %w", p, err)
		}
	}
	for len(items) > 0 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Data.
		var dpaths []string
		var didx []int
		for i, it := range items {
			if it.what&dirtyData != 0 && e.relevant(it) {
				dpaths = append(dpaths, it.path)
				didx = append(didx, i)
			}
		}
		dres := e.fetchData(ctx, dpaths)
		for j, i := range didx {
			it := &items[i]
			r := dres[j]
			switch {
			case !e.relevant(*it):
				it.what = 0
			case errors.Is(r.err, framework.ErrNoNode):
				e.gone(ctx, it.path, fail)
				it.what = 0
			case r.err != nil:
				d := it.what
				if it.fresh {
					d |= dirtyFresh
				}
				fail(it.path, d, r.err)
				it.what = 0
			default:
				delete(e.unreadable, it.path)
				if e.applyData(it.path, r.data, r.stat) {
					it.what |= dirtyKids
				}
			}
		}
		// Children.
		var kpaths []string
		var kidx []int
		for i, it := range items {
			if it.what&dirtyKids != 0 && e.cached(it.path) && e.traverse(it.path) {
				kpaths = append(kpaths, it.path)
				kidx = append(kidx, i)
			}
		}
		kres := e.fetchKids(ctx, kpaths)
		var next []item
		for j, i := range kidx {
			it := items[i]
			r := kres[j]
			switch {
			case !e.cached(it.path):
			case errors.Is(r.err, framework.ErrNoNode):
				e.gone(ctx, it.path, fail)
			case r.err != nil:
				fail(it.path, dirtyKids, r.err)
			case !e.applyListedStat(it.path, r.stat):
				// Replaced since its data was read: read it again, and the new node
				// takes the old one's place (applyData).
				e.markDirty(it.path, dirtyAll)
			default:
				for _, name := range e.applyKids(it.path, r.names) {
					next = append(next, item{path: childPath(it.path, name), what: dirtyAll, fresh: true})
				}
			}
		}
		items = next
	}
	return firstErr
}

// gone handles a node found missing: it and its subtree leave the cache; for the root,
// an exists watch waits for it to come back.
func (e *engine) gone(ctx context.Context, p string, fail func(string, dirt, error)) {
	e.removeSubtree(p)
	if p != e.cfg.root {
		return
	}
	if e.isArmed(p, existWatch) {
		return
	}
	st, ch, err := e.cfg.client.ExistsW(ctx, p)
	if err != nil {
		fail(p, dirtyAll, err)
		return
	}
	e.arm(p, existWatch, ch)
	if st != nil {
		e.markDirty(p, dirtyAll) // created meanwhile
	}
}

// isArmed reports whether the engine armed a watch of kind k on p that has not fired.
func (e *engine) isArmed(p string, k watchKind) bool {
	pw := e.armed[p]
	return pw != nil && pw.w[k] != nil
}

// arm records fw, a watch of kind k on p, and has the engine told when it fires.
func (e *engine) arm(p string, k watchKind, fw *framework.Watch) {
	if fw == nil {
		return
	}
	pw := e.armed[p]
	if pw == nil {
		pw = &pathWatch{e: e, path: p}
		e.armed[p] = pw
	}
	pw.w[k] = fw
	fw.Handle(pw.handler(k))
}

// fetchData reads the data of paths, several at a time, with a watch where none is
// armed.
func (e *engine) fetchData(ctx context.Context, paths []string) []dataRes {
	res := make([]dataRes, len(paths))
	chans := make([]*framework.Watch, len(paths))
	watch := make([]bool, len(paths))
	for i, p := range paths {
		watch[i] = !e.isArmed(p, dataWatch)
	}
	c := e.cfg.client
	parallel(len(paths), func(i int) {
		if watch[i] {
			res[i].data, res[i].stat, chans[i], res[i].err = c.GetDataW(ctx, paths[i])
		} else {
			res[i].data, res[i].stat, res[i].err = c.GetData(ctx, paths[i])
		}
	})
	for i, ch := range chans {
		e.arm(paths[i], dataWatch, ch)
	}
	return res
}

// fetchKids lists the children of paths, several at a time, with a watch where none is
// armed.
func (e *engine) fetchKids(ctx context.Context, paths []string) []kidsRes {
	res := make([]kidsRes, len(paths))
	chans := make([]*framework.Watch, len(paths))
	watch := make([]bool, len(paths))
	for i, p := range paths {
		watch[i] = !e.isArmed(p, childWatch)
	}
	c := e.cfg.client
	parallel(len(paths), func(i int) {
		if watch[i] {
			res[i].names, res[i].stat, chans[i], res[i].err = c.ChildrenW(ctx, paths[i])
		} else {
			res[i].names, res[i].stat, res[i].err = c.Children(ctx, paths[i])
		}
	})
	for i, ch := range chans {
		e.arm(paths[i], childWatch, ch)
	}
	return res
}

// parallel calls fn(0..n-1) on up to fetchParallelism goroutines and waits for them.
func parallel(n int, fn func(int)) {
	if n <= 1 {
		if n == 1 {
			fn(0)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, fetchParallelism) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// applyData puts what was read for p into the cache and reports whether p was added.
// A node read with another czxid than the cached one was deleted and made again between
// two reads: the cache holds the new node before its listeners hear the old one removed,
// so that the node is never missing from the cache in between.
func (e *engine) applyData(p string, data []byte, st *framework.Stat) (added bool) {
	if !e.cfg.opts.cacheData {
		data = nil
	}
	old := e.nodes[p]
	if old != nil && old.stat.Czxid == st.Czxid {
		if old.stat.Mzxid == st.Mzxid {
			e.mu.Lock()
			old.stat = *st // children changed, say: no event
			e.mu.Unlock()
			return false
		}
		before := &ChildData{Path: p, Data: old.data, Stat: old.stat}
		e.mu.Lock()
		old.data, old.stat = data, *st
		e.mu.Unlock()
		e.emit(kUpdated, p, &ChildData{Path: p, Data: data, Stat: *st}, before)
		return false
	}
	var parent *node
	if p != e.cfg.root {
		parent = e.nodes[framework.ParentPath(p)]
		if parent == nil {
			return false
		}
		if st.Czxid > parent.listed {
			// Created after the parent's listing: its parent may be a node that
			// replaced the cached one. Listing the parent again tells; the node is read
			// again after that listing (a fresh child from the listing itself).
			e.markDirty(framework.ParentPath(p), dirtyKids)
			if old != nil {
				e.markDirty(p, dirtyData)
			}
			return false
		}
	}
	var removed []*ChildData
	if old != nil {
		removed = e.dropSubtree(p, nil)
	}
	e.mu.Lock()
	if parent != nil {
		if parent.kids == nil {
			parent.kids = map[string]struct{}{}
		}
		parent.kids[framework.NodeName(p)] = struct{}{}
	}
	e.nodes[p] = &node{data: data, stat: *st}
	e.mu.Unlock()
	for _, r := range removed {
		e.emit(kRemoved, r.Path, r, nil)
	}
	e.emit(kAdded, p, &ChildData{Path: p, Data: data, Stat: *st}, nil)
	return true
}

// applyListedStat puts the Stat a listing of p's children returned into the cache, and
// reports whether the listing is of the cached node (false: p was deleted and created
// again since the cache read it; its listing must not be applied to the old node). A
// child created or deleted changes p's cversion, numChildren and pzxid but not its mzxid,
// and fires no data watch. A Stat whose mzxid differs from the cached one belongs to data
// the cache has not read (the data changed after it was read): the data is read again,
// with its Stat, rather than the cached data given a Stat it never had.
func (e *engine) applyListedStat(p string, st *framework.Stat) bool {
	n := e.nodes[p]
	if st.Czxid != n.stat.Czxid {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n.listed = max(n.listed, st.Pzxid)
	switch {
	case st.Mzxid != n.stat.Mzxid:
		e.markDirty(p, dirtyData)
	case st.Pzxid >= n.stat.Pzxid:
		n.stat = *st
	}
	return true
}

// permanent reports whether a failed read cannot succeed by retrying: not a connection-class
// failure, an ended context or a closed client (NoAuth, say).
func permanent(err error) bool {
	return !retry.IsRetryable(err, true) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, framework.ErrClosed)
}

// unreadableNode handles a node that exists but cannot be read (err): it is not held
// (when it was, the node it was has been replaced, or its ACL changed: it and its subtree
// are reported removed), and it is reported Unreadable.
func (e *engine) unreadableNode(p string, err error) {
	e.removeSubtree(p)
	e.reportUnreadable(p, err)
}

// recheckUnreadable marks the nodes reported Unreadable to be read again, and forgets
// those the cache no longer follows (their parent is gone).
func (e *engine) recheckUnreadable() {
	for p := range e.unreadable {
		switch {
		case p == e.cfg.root:
			e.markDirty(p, dirtyAll)
		case e.cached(framework.ParentPath(p)):
			e.markDirty(p, dirtyAll|dirtyFresh)
		default:
			delete(e.unreadable, p)
		}
	}
}

// reportUnreadable reports p as Unreadable with err, once for the same error until the
// next reconnection.
func (e *engine) reportUnreadable(p string, err error) {
	msg := err.Error()
	if e.unreadable[p] == msg {
		return
	}
	e.unreadable[p] = msg
	e.log.Warn("cannot read a node", "component", "cache", "cache", e.cfg.name, "path", p, "err", err)
	if t := e.cfg.types[kUnreadable]; t != 0 {
		e.disp.push(Event{Type: t, Data: &ChildData{Path: p}, Err: err})
	}
}

// applyKids removes the cached children of p that are not in names and returns the
// accepted names that are not cached yet, sorted.
func (e *engine) applyKids(p string, names []string) []string {
	n := e.nodes[p]
	want := make(map[string]bool, len(names))
	var fresh []string
	for _, name := range names {
		cp := childPath(p, name)
		if e.cfg.opts.selector != nil && !e.cfg.opts.selector.AcceptChild(cp) {
			continue
		}
		want[name] = true
		if _, ok := n.kids[name]; !ok {
			fresh = append(fresh, name)
		}
	}
	var stale []string
	for name := range n.kids {
		if !want[name] {
			stale = append(stale, name)
		}
	}
	slices.Sort(stale)
	for _, name := range stale {
		e.removeSubtree(childPath(p, name))
	}
	for q := range e.unreadable {
		if q != p && framework.ParentPath(q) == p && !want[framework.NodeName(q)] {
			delete(e.unreadable, q) // gone: report it again if it comes back unreadable
		}
	}
	slices.Sort(fresh)
	return fresh
}

// removeSubtree drops p and everything below it, then reports each removal, children
// first.
func (e *engine) removeSubtree(p string) {
	for _, r := range e.dropSubtree(p, nil) {
		e.emit(kRemoved, r.Path, r, nil)
	}
}

// dropSubtree drops p and everything below it from the cache and appends what it held to
// out, children first.
func (e *engine) dropSubtree(p string, out []*ChildData) []*ChildData {
	n := e.nodes[p]
	if n == nil {
		return out
	}
	kids := make([]string, 0, len(n.kids))
	for name := range n.kids {
		kids = append(kids, name)
	}
	slices.Sort(kids)
	for _, name := range kids {
		out = e.dropSubtree(childPath(p, name), out)
	}
	e.mu.Lock()
	delete(e.nodes, p)
	if parent := e.nodes[framework.ParentPath(p)]; parent != nil && p != e.cfg.root {
		delete(parent.kids, framework.NodeName(p))
	}
	e.mu.Unlock()
	return append(out, &ChildData{Path: p, Data: n.data, Stat: n.stat})
}

func (e *engine) emit(k kind, p string, data, old *ChildData) {
	if p == e.cfg.root && !e.cfg.emitRoot {
		return
	}
	if !e.initialized && e.cfg.opts.mode == BuildInitialCache {
		return // the initial contents are not events in this mode
	}
	e.emitType(e.cfg.types[k], data, old)
}

// emitType queues an event. Data slices are shared with the cache here; the dispatcher
// hands each listener its own copy.
func (e *engine) emitType(t EventType, data, old *ChildData) {
	if t == 0 {
		return
	}
	e.disp.push(Event{Type: t, Data: data, Old: old})
}

func childPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// get returns a copy of the cached node at p.
func (e *engine) get(p string) (ChildData, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	n := e.nodes[p]
	if n == nil {
		return ChildData{}, false
	}
	return ChildData{Path: p, Data: n.data, Stat: n.stat}.clone(), true
}

// children returns copies of the cached children of p, by name.
func (e *engine) children(p string) (map[string]ChildData, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	n := e.nodes[p]
	if n == nil {
		return nil, false
	}
	out := make(map[string]ChildData, len(n.kids))
	for name := range n.kids {
		cp := childPath(p, name)
		if k := e.nodes[cp]; k != nil {
			out[name] = ChildData{Path: cp, Data: k.data, Stat: k.stat}.clone()
		}
	}
	return out, true
}

// snapshot returns copies of every cached node, by path.
func (e *engine) snapshot() map[string]ChildData {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make(map[string]ChildData, len(e.nodes))
	for p, n := range e.nodes {
		out[p] = ChildData{Path: p, Data: n.data, Stat: n.stat}.clone()
	}
	return out
}
