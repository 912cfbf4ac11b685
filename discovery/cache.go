package discovery

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
)

// CacheEventType says what a ServiceCache listener hears.
type CacheEventType int

const (
	// CacheChanged: the cached instances changed (Curator's cacheChanged).
	CacheChanged CacheEventType = iota + 1
	// CacheBadInstance: a node's data is not an instance; the cache skips the node. Path
	// and Err say which and why.
	CacheBadInstance
	// CacheSuspended: the client lost its connection; the cache may be stale.
	CacheSuspended
	// CacheReconnected: the client is connected again; the cache reads the registry again.
	CacheReconnected
	// CacheLost: the client's session is gone or must be assumed gone; the cache is stale
	// (providers return ErrStale) until it has read the registry again.
	CacheLost
)

// String returns the event type's name.
func (t CacheEventType) String() string {
	switch t {
	case CacheChanged:
		return "CACHE_CHANGED"
	case CacheBadInstance:
		return "BAD_INSTANCE"
	case CacheSuspended:
		return "SUSPENDED"
	case CacheReconnected:
		return "RECONNECTED"
	case CacheLost:
		return "LOST"
	}
	return fmt.Sprintf("CacheEventType(%d)", int(t))
}

// CacheEvent is one event a ServiceCache reports.
type CacheEvent struct {
	Type CacheEventType
	Path string // the node, for CacheBadInstance
	Err  error  // an *InstanceError, for CacheBadInstance
}

// ServiceCache keeps the instances of one service current (Curator's ServiceCache): it
// follows basePath/<name> with a path-children cache, so reads cost no request.
// Listeners hear CacheChanged after each change once the cache is started, a
// CacheBadInstance for each node whose data is not an instance (the node is skipped),
// and the connection events. A ServiceCache is safe for concurrent use.
//
// While the client is disconnected the cache keeps what it holds. Once the client
// reports the session lost (it expired, or the client was cut off for longer than the
// session timeout), the cache is stale until, reconnected, it has read the registry
// again: Instances still returns what it holds, Fresh reports false and providers
// return ErrStale. That read drops every instance whose node is gone, one deleted and
// made again meanwhile too (a node is known by its czxid, not its name): the new node's
// instance follows once the cache has read it; and it takes the new data of an instance
// updated meanwhile (its mzxid).
//
// A node this client may not read is not an instance the cache holds: it is reported
// CacheBadInstance (an *InstanceError wrapping framework.ErrNoAuth). But ZooKeeper
// tells a watch nothing of a change to a node its client may not read, and setACL fires
// no watch (see the cache package's "Nodes this client may not read"): an instance whose
// node's ACL is narrowed to deny this client READ after the cache read it is held as
// last read, and handed out by providers, whatever its owner writes into it since
// (Enabled false, say), until a reconnection makes the cache read it again (then it is
// dropped and reported CacheBadInstance). Its deletion is seen at once (the service
// node's children change).
//
// Listeners run on a goroutine of the cache's own: a slow listener delays neither the
// cache's updates nor the stale flag, only what the listeners after it hear.
type ServiceCache[T any] struct {
	d    *ServiceDiscovery[T]
	name string
	pc   *cache.PathChildrenCache

	ctx    context.Context // ends at Close
	cancel context.CancelFunc

	mu        sync.Mutex
	instances map[string]cached[T] // by node name
	started   bool
	closed    bool
	stale     bool
	// gen is the client's session generation the cached instances were read in: a
	// Lost starts the next one (framework.Client.Generation), and the cache is stale
	// from that moment, not only once its own listener hears the Lost (the client's
	// state listeners run one at a time: another one may be busy).
	gen       uint64
	listeners []*cacheListener
	queue     []CacheEvent  // events not yet told to the listeners
	told      chan struct{} // closed when the teller returns; nil before Start

	// The listeners run on a goroutine of their own (the teller, on gs), never on the
	// path-children cache's: a slow or panicking listener delays nothing the cache
	// does (a removal, the stale flag, the read after a lost session), and a listener
	// may close the cache (Close does not wait for the goroutine it is called on).
	gs  *framework.Goroutines
	sig chan struct{}

	removePC    func()
	initialized chan struct{} // closed when the first read is in
}

// cached is one instance in the cache, with the czxid of the node it was read from (a
// node deleted and made again under the same name is another registration) and the mzxid
// of the data it was read from (an update, Enabled false say, is another instance).
//
// It keeps the node's data, not the decoded instance: each caller gets an instance decoded
// from it, which shares nothing (a payload's map) with what another caller got.
type cached[T any] struct {
	data  []byte // an instance's: decoded once when cached
	czxid int64
	mzxid int64
}

type cacheListener struct {
	fn      func(CacheEvent)
	removed bool
}

// NewCache returns a cache of the instances of the service name. Call Start.
func (d *ServiceDiscovery[T]) NewCache(name string) (*ServiceCache[T], error) {
	if err := validName("service name", name); err != nil {
		return nil, err
	}
	pc, err := cache.NewPathChildrenCache(d.c, d.pathForName(name), cache.WithStartMode(cache.PostInitializedEvent))
	if err != nil {
		return nil, err
	}
	sc := &ServiceCache[T]{d: d, name: name, pc: pc, instances: map[string]cached[T]{}, initialized: make(chan struct{}),
		gs: framework.NewGoroutines(), sig: make(chan struct{}, 1)}
	sc.ctx, sc.cancel = context.WithCancel(context.Background())
	if err := d.own(sc); err != nil {
		sc.cancel()
		_ = pc.Close()
		return nil, err
	}
	return sc, nil
}

// Name returns the service's name.
func (sc *ServiceCache[T]) Name() string { return sc.name }

// Start reads the instances there now and returns once they are in the cache (or as
// soon as ctx ends: the cache is then closed, without waiting for a listener still busy
// with an event it sent, which is told nothing more once its call returns and which
// Close waits for; or the cache is closed meanwhile: ErrClosed); from then on it follows
// them.
func (sc *ServiceCache[T]) Start(ctx context.Context) error {
	sc.mu.Lock()
	switch {
	case sc.closed:
		sc.mu.Unlock()
		return ErrClosed
	case sc.started:
		sc.mu.Unlock()
		return ErrAlreadyStarted
	}
	sc.started = true
	// The first read is done in this generation or a later one (a Lost meanwhile
	// makes the cache stale until its read after the reconnection); before the first
	// connection the generation is 0 and the first session's is 1.
	sc.gen = max(sc.d.c.Generation(), 1)
	told := make(chan struct{})
	sc.told = told
	sc.gs.Go(func() {
		defer close(told)
		sc.tell()
	})
	sc.removePC = sc.pc.AddListener(sc.onEvent)
	sc.mu.Unlock()
	err := sc.pc.Start(ctx)
	if err == nil {
		select {
		case <-sc.initialized:
			return nil
		case <-ctx.Done():
			err = ctx.Err()
		case <-sc.d.c.Done():
			err = framework.ErrClosed
		case <-sc.ctx.Done(): // the cache closed meanwhile
			err = ErrClosed
		}
	}
	// Closed without waiting for a listener still busy with an event of the start
	// (CacheSuspended, say): the teller ends when that call returns.
	_ = sc.shut(false)
	return fmt.Errorf("discovery: start cache of %s: %w", sc.name, err)
}

func (sc *ServiceCache[T]) onEvent(ev cache.Event) {
	sc.mu.Lock()
	closed := sc.closed
	sc.mu.Unlock()
	if closed {
		return
	}
	switch ev.Type {
	case cache.Initialized:
		close(sc.initialized)
	case cache.ChildAdded, cache.ChildUpdated:
		_, err := decodeNode[T](ev.Data.Path, ev.Data.Data)
		key := framework.NodeName(ev.Data.Path)
		st := ev.Data.Stat
		sc.mu.Lock()
		if cur, ok := sc.instances[key]; ok && cur.czxid == st.Czxid && cur.mzxid > st.Mzxid {
			// The resync after a lost session read newer data of this node already.
			sc.mu.Unlock()
			return
		}
		if err != nil {
			delete(sc.instances, key)
		} else {
			sc.instances[key] = cached[T]{data: ev.Data.Data, czxid: st.Czxid, mzxid: st.Mzxid}
		}
		sc.mu.Unlock()
		if err != nil {
			sc.emit(CacheEvent{Type: CacheBadInstance, Path: ev.Data.Path, Err: err})
		}
		sc.changed()
	case cache.ChildRemoved:
		if cur, ok := sc.pc.Get(ev.Data.Path); ok && cur.Stat.Czxid != ev.Data.Stat.Czxid {
			// Deleted and created again (a registration replacing its node, in one
			// transaction): the new node's addition follows. Dropping the instance
			// until then would have it vanish from providers for that moment.
			return
		}
		sc.mu.Lock()
		delete(sc.instances, framework.NodeName(ev.Data.Path))
		sc.mu.Unlock()
		sc.changed()
	case cache.Unreadable:
		// The path-children cache holds no node it may not read: nor does this cache
		// (an instance held there before was deleted, the node made again unreadable).
		held := false
		if framework.ParentPath(ev.Data.Path) == sc.pc.Path() {
			sc.mu.Lock()
			key := framework.NodeName(ev.Data.Path)
			_, held = sc.instances[key]
			delete(sc.instances, key)
			sc.mu.Unlock()
		}
		sc.emit(CacheEvent{Type: CacheBadInstance, Path: ev.Data.Path, Err: &InstanceError{Path: ev.Data.Path, Err: ev.Err}})
		if held {
			sc.changed()
		}
	case cache.ConnectionSuspended:
		sc.emit(CacheEvent{Type: CacheSuspended})
	case cache.ConnectionLost:
		sc.mu.Lock()
		sc.stale = true
		sc.mu.Unlock()
		sc.emit(CacheEvent{Type: CacheLost})
	case cache.ConnectionReconnected:
		sc.emit(CacheEvent{Type: CacheReconnected})
		sc.mu.Lock()
		stale := sc.stale
		sc.mu.Unlock()
		if stale {
			sc.resync()
		}
	}
}

// resync reads the registry again after a lost session: it drops the instances whose
// node is gone and takes the new data of those updated meanwhile, so that the cache is
// fresh again at once (the path-children cache reports the same changes later, and the
// additions).
func (sc *ServiceCache[T]) resync() {
	for {
		gen := sc.d.c.Generation() // the reads below are of this generation or later
		gone, updated, err := sc.changedSince()
		if err == nil {
			sc.mu.Lock()
			for k, czxid := range gone {
				if cur, ok := sc.instances[k]; ok && cur.czxid == czxid {
					delete(sc.instances, k)
				}
			}
			for k, c := range updated {
				if cur, ok := sc.instances[k]; ok && cur.czxid == c.czxid && cur.mzxid < c.mzxid {
					sc.instances[k] = c
				}
			}
			sc.stale = false
			sc.gen = gen
			sc.mu.Unlock()
			if len(gone)+len(updated) > 0 {
				sc.changed()
			}
			return
		}
		t := time.NewTimer(retryPause)
		select {
		case <-sc.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// changedSince returns the cached instances (name and czxid) whose node is gone (no node
// of that name, or one made since: another czxid, deleted and registered again meanwhile,
// which a name cannot tell; or one this client may not read, or whose data is no
// instance), and those whose node was updated since they were read (another mzxid), as
// read now.
func (sc *ServiceCache[T]) changedSince() (gone map[string]int64, updated map[string]cached[T], err error) {
	kids, _, err := sc.d.c.Children(sc.ctx, sc.pc.Path())
	if errors.Is(err, framework.ErrNoNode) {
		kids, err = nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	present := map[string]bool{}
	for _, k := range kids {
		present[k] = true
	}
	sc.mu.Lock()
	held := make(map[string]cached[T], len(sc.instances))
	for k, c := range sc.instances {
		held[k] = c
	}
	sc.mu.Unlock()
	gone, updated = map[string]int64{}, map[string]cached[T]{}
	for k, c := range held {
		if !present[k] {
			gone[k] = c.czxid
			continue
		}
		p := framework.JoinPath(sc.pc.Path(), k)
		st, err := sc.d.c.Exists(sc.ctx, p) // needs no permission, unlike a read
		switch {
		case err != nil:
			return nil, nil, err
		case st == nil || st.Czxid != c.czxid:
			gone[k] = c.czxid
			continue
		case st.Mzxid == c.mzxid:
			continue
		}
		data, st, err := sc.d.c.GetData(sc.ctx, p) // updated meanwhile: read it
		switch {
		case errors.Is(err, framework.ErrNoNode), errors.Is(err, framework.ErrNoAuth):
			gone[k] = c.czxid
			continue
		case err != nil:
			return nil, nil, err
		case st.Czxid != c.czxid:
			gone[k] = c.czxid
			continue
		}
		if _, err := decodeNode[T](p, data); err != nil {
			gone[k] = c.czxid
			continue
		}
		updated[k] = cached[T]{data: data, czxid: st.Czxid, mzxid: st.Mzxid}
	}
	return gone, updated, nil
}

// changed reports CacheChanged once the cache is initialized (as Curator's).
func (sc *ServiceCache[T]) changed() {
	select {
	case <-sc.initialized:
		sc.emit(CacheEvent{Type: CacheChanged})
	default:
	}
}

// emit queues ev for the listeners; the teller tells them.
func (sc *ServiceCache[T]) emit(ev CacheEvent) {
	sc.mu.Lock()
	if sc.closed {
		sc.mu.Unlock()
		return
	}
	sc.queue = append(sc.queue, ev)
	sc.mu.Unlock()
	select {
	case sc.sig <- struct{}{}:
	default:
	}
}

// tell tells the listeners the queued events, one call at a time, in order, until the
// cache is closed.
func (sc *ServiceCache[T]) tell() {
	for {
		sc.mu.Lock()
		if sc.closed {
			sc.mu.Unlock()
			return
		}
		if len(sc.queue) == 0 {
			sc.queue = nil
			sc.mu.Unlock()
			select {
			case <-sc.sig:
			case <-sc.ctx.Done():
			}
			continue
		}
		ev := sc.queue[0]
		sc.queue = sc.queue[1:]
		ls := append([]*cacheListener(nil), sc.listeners...)
		sc.mu.Unlock()
		for _, l := range ls {
			sc.mu.Lock()
			closed, gone := sc.closed, l.removed
			sc.mu.Unlock()
			if closed { // a listener may have closed the cache
				return
			}
			if !gone {
				sc.call(l, ev)
			}
		}
	}
}

// call tells one listener; a listener that panics is logged and the cache goes on (its
// own work, and the listeners after it).
func (sc *ServiceCache[T]) call(l *cacheListener, ev CacheEvent) {
	callListener(sc.d.c.Logger(), "service cache listener panicked", func() { l.fn(ev) }, "service", sc.name, "event", ev.Type.String())
}

// AddListener registers fn to hear the cache's events, one call at a time, in order, on a
// goroutine the cache owns. A listener that panics is logged (at Error, on the client's
// logger) and the cache goes on. It returns a function that unregisters fn.
func (sc *ServiceCache[T]) AddListener(fn func(CacheEvent)) (remove func()) {
	if fn == nil {
		return func() {}
	}
	l := &cacheListener{fn: fn}
	sc.mu.Lock()
	sc.listeners = append(sc.listeners, l)
	sc.mu.Unlock()
	return func() {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		l.removed = true
		for i, x := range sc.listeners {
			if x == l {
				sc.listeners = append(sc.listeners[:i], sc.listeners[i+1:]...)
				return
			}
		}
	}
}

// Instances returns copies of the cached instances, sorted by node name: each call
// decodes them anew, so that a caller changing what it got (a payload's map) changes
// nothing another caller gets. It costs no request.
func (sc *ServiceCache[T]) Instances() []*Instance[T] {
	sc.mu.Lock()
	keys := make([]string, 0, len(sc.instances))
	for k := range sc.instances {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	data := make([][]byte, 0, len(keys))
	for _, k := range keys {
		data = append(data, sc.instances[k].data) // never written once cached
	}
	sc.mu.Unlock()
	out := make([]*Instance[T], 0, len(data))
	for _, b := range data {
		if inst, err := Unmarshal[T](b); err == nil { // decoded once already: no error
			out = append(out, inst)
		}
	}
	return out
}

// Fresh reports whether the cache can be trusted: started and its first read of the
// registry done, not closed, its client not closed (it follows nothing any more), and
// not stale after a lost session (from the moment the client reports it lost, whatever
// its other state listeners are doing, until the cache has read the registry again).
func (sc *ServiceCache[T]) Fresh() bool {
	return sc.state() == nil
}

func (sc *ServiceCache[T]) state() error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	switch {
	case sc.closed:
		return ErrClosed
	case isDone(sc.d.c.Done()):
		return fmt.Errorf("%w: the client of the cache of %s is closed", ErrClosed, sc.name)
	case !sc.started:
		return ErrNotStarted
	case !isDone(sc.initialized):
		return fmt.Errorf("%w: the cache of %s has not read the registry yet", ErrNotStarted, sc.name)
	case sc.stale, sc.d.c.Generation() != sc.gen:
		return fmt.Errorf("%w: %s", ErrStale, sc.name)
	}
	return nil
}

// Close stops the cache and waits for its goroutines: no listener is told anything after
// it returns. It may be called more than once, also from a listener: there it returns
// without waiting for the listener's own goroutine, and the listeners after it are not
// told of that event.
func (sc *ServiceCache[T]) Close() error { return sc.shut(true) }

// shut stops the cache; with waitListeners false it does not wait for the teller (a
// listener busy in a call of its own), which returns once that call does and tells
// nothing after.
func (sc *ServiceCache[T]) shut(waitListeners bool) error {
	sc.mu.Lock()
	told := sc.told
	if sc.closed {
		sc.mu.Unlock()
		if !sc.gs.Inside() {
			_ = sc.pc.Close() // waits for the first Close's work
			if told != nil {
				<-told
			}
		}
		return nil
	}
	sc.closed = true
	sc.instances = map[string]cached[T]{}
	sc.queue = nil
	removePC := sc.removePC
	sc.mu.Unlock()
	sc.cancel()
	err := sc.pc.Close()
	if removePC != nil {
		removePC()
	}
	sc.d.disown(sc)
	if told != nil && waitListeners && !sc.gs.Inside() {
		<-told
	}
	return err
}
