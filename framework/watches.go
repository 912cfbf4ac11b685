package framework

import (
	"context"
	"errors"
	"reflect"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Watch is a one-time watch on a node, set by GetDataW, ExistsW or ChildrenW. The client
// holds at most one watch per node and kind (data, exists, children) at a time and hands
// it to every caller that asks for that watch before it fires, however many callers and
// calls: go-zookeeper cannot remove a watch, so a caller that stops waiting (its context
// ended) leaves nothing behind that a later call adds to. A Watch is safe for concurrent
// use; any number of goroutines may wait on Done, and any number of handlers (Handle) be
// told when it fires.
//
// A Watch costs no channel and no goroutine until one is asked for: Done makes its
// channel on the first call, so that a cache of many nodes, told by Handle, pays for
// neither.
type Watch struct {
	ws *watches // its registry, whose mutex guards every field below

	h    WatchHandler  // told when the watch fires
	done chan struct{} // made by Done before the watch fired; closed when it fires
	// x holds what most watches never need while they are set (a second handler, a
	// caller waiting for the arming, its error, the event once fired): made by the first
	// that does, so that a watch a cache holds for each of its nodes costs no more than
	// this struct and its registry entry.
	x *watchExtra

	armed bool // the request that sets the watch was answered
	fired bool
	// pending: an event of this kind of watch came for the node while the request that
	// sets the watch was in flight. Whether it fires the watch depends on whether the
	// server answered the request before or after the change, which only go-zookeeper's
	// own watch channel tells (see watches.armed).
	pending bool
}

// watchExtra is the rarely needed part of a Watch, guarded by its registry's mutex.
type watchExtra struct {
	ev      Event          // what fired it, once fired
	armWait chan struct{}  // made by a caller waiting for the request that sets the watch
	armErr  error          // the outcome of that request, once armed; not nil: no watch was set
	more    []WatchHandler // more handlers, when more than one was given
	// early are the events of the watch's kind, on our own connection, that came before
	// the request that set it was recorded as answered (armed): the first that came
	// after its reply fires it then.
	early []orderedEvent
}

// extra returns w.x, made if need be; the registry's mutex is held.
func (w *Watch) extra() *watchExtra {
	if w.x == nil {
		w.x = &watchExtra{}
	}
	return w.x
}

// A WatchHandler is told when a Watch fires (Watch.Handle). WatchFired runs on the
// goroutine that fires the watch: for a node event, go-zookeeper's receive loop, which
// delivers every reply and event of the session. It must return at once and must not call
// the client: queue the event and act on it elsewhere. Unhandle finds a handler with ==:
// give a handler of a comparable type (a pointer, or a struct of comparable fields) if it
// may be withdrawn; a handler of a type that cannot be compared (a func or map type) is
// told as any other but Unhandle cannot find it (it does nothing, rather than panic).
type WatchHandler interface {
	WatchFired(w *Watch, ev Event)
}

// Done returns a channel that is closed when the watch fires: the node changed as the
// kind of watch says, or the watch ended because the session did or the client closed
// (then Event's Type is EventNotWatching). It fires once. Done of a nil *Watch is nil: a
// select waits on it forever, as on a nil channel.
func (w *Watch) Done() <-chan struct{} {
	if w == nil {
		return nil
	}
	w.ws.mu.Lock()
	defer w.ws.mu.Unlock()
	if w.fired {
		return closedCh
	}
	if w.done == nil {
		w.done = make(chan struct{})
	}
	return w.done
}

// Event returns what fired the watch (its Path is the server's path, with the
// namespace); the zero Event before the watch fired.
func (w *Watch) Event() Event {
	if w == nil {
		return Event{}
	}
	w.ws.mu.Lock()
	defer w.ws.mu.Unlock()
	if !w.fired {
		return Event{}
	}
	return w.x.ev
}

// Handle has h told once when w fires, with the event Event returns, after Done's channel
// is closed; when w fired already, h is told at once, on the calling goroutine. Each call
// adds one telling. A handler whose owner stops listening before the watch fires should be
// withdrawn (Unhandle): a watch may never fire, and it holds its handlers until it does.
// Handle of a nil *Watch does nothing.
func (w *Watch) Handle(h WatchHandler) {
	if w == nil || h == nil {
		return
	}
	w.ws.mu.Lock()
	if w.fired {
		ev := w.x.ev
		w.ws.mu.Unlock()
		h.WatchFired(w, ev)
		return
	}
	if w.h == nil {
		w.h = h
	} else {
		x := w.extra()
		x.more = append(x.more, h)
	}
	w.ws.mu.Unlock()
}

// Unhandle withdraws one telling of h given by Handle that has not started yet; it does
// nothing when there is none. A telling the firing goroutine has started may still
// happen after Unhandle returns.
func (w *Watch) Unhandle(h WatchHandler) {
	if w == nil || h == nil || !reflect.ValueOf(h).Comparable() {
		return // nothing to find (see WatchHandler: == would panic)
	}
	w.ws.mu.Lock()
	defer w.ws.mu.Unlock()
	var more []WatchHandler
	if w.x != nil {
		more = w.x.more
	}
	if w.h == h {
		w.h = nil
		if len(more) > 0 {
			w.h = more[0]
			w.x.more = more[1:]
			if len(w.x.more) == 0 {
				w.x.more = nil
			}
		}
		return
	}
	for i, x := range more {
		if x == h {
			more = append(more[:i:i], more[i+1:]...)
			if len(more) == 0 {
				more = nil
			}
			w.x.more = more
			return
		}
	}
}

type watchKind uint8

const (
	watchData watchKind = iota
	watchExists
	watchChildren
	numWatchKinds
)

// watchKey names a watch: the go-zookeeper connection (a session) it was set on, its kind
// and the server path.
type watchKey struct {
	conn zkConn
	kind watchKind
	path string
}

// connWatches is the registry's watches of one connection, by kind and server path. Its
// maps are keyed by the path alone (the string the caller's read was sent with, shared with
// go-zookeeper's own watcher map), which keeps an entry at a pointer and a string.
type connWatches [numWatchKinds]map[string]*Watch

func (cw *connWatches) empty() bool {
	for _, m := range cw {
		if m != nil {
			return false
		}
	}
	return true
}

// watches is the client's registry of the watches that are set and have not fired. It is
// fed the node events of every connection by the event callback (go-zookeeper's receive
// loop): it must not block. go-zookeeper also hands each event to the channel it made for
// its own watch; nothing reads those channels (but in the rare case armed describes):
// each is buffered for its one event and closed after it, and dropped with go-zookeeper's
// watch, so an unread one holds nothing.
type watches struct {
	mu     sync.Mutex
	m      map[zkConn]*connWatches // a connection's entry is dropped when it holds none
	n      int                     // the watches in m
	closed chan struct{}           // closed by closeAll
}

func newWatches() *watches {
	return &watches{m: map[zkConn]*connWatches{}, closed: make(chan struct{})}
}

// lookup returns the watch registered for key, or nil; ws.mu is held.
func (ws *watches) lookup(key watchKey) *Watch {
	cw := ws.m[key.conn]
	if cw == nil {
		return nil
	}
	return cw[key.kind][key.path]
}

// store registers w for key (none is); ws.mu is held.
func (ws *watches) store(key watchKey, w *Watch) {
	cw := ws.m[key.conn]
	if cw == nil {
		cw = &connWatches{}
		ws.m[key.conn] = cw
	}
	if cw[key.kind] == nil {
		cw[key.kind] = map[string]*Watch{}
	}
	cw[key.kind][key.path] = w
	ws.n++
}

// forget removes w from the registry if it is registered for key; an emptied map is
// dropped (a map keeps its size once grown). ws.mu is held.
func (ws *watches) forget(key watchKey, w *Watch) {
	cw := ws.m[key.conn]
	if cw == nil || cw[key.kind][key.path] != w {
		return
	}
	delete(cw[key.kind], key.path)
	ws.n--
	if len(cw[key.kind]) == 0 {
		cw[key.kind] = nil
		if cw.empty() {
			delete(ws.m, key.conn)
		}
	}
}

// fired is a watch that fired and the handlers to tell, once ws.mu is released.
type fired struct {
	w  *Watch
	ev Event
	h  WatchHandler
	hs []WatchHandler
}

func (f fired) tell() {
	if f.h != nil {
		f.h.WatchFired(f.w, f.ev)
	}
	for _, h := range f.hs {
		h.WatchFired(f.w, f.ev)
	}
}

// fireLocked fires w with ev (it has not fired) and returns the handlers to tell.
func (ws *watches) fireLocked(key watchKey, w *Watch, ev Event) fired {
	ws.forget(key, w)
	w.fired = true
	x := w.extra()
	x.ev = ev
	if w.done != nil {
		close(w.done)
	}
	f := fired{w: w, ev: ev, h: w.h, hs: x.more}
	w.h, x.more = nil, nil
	return f
}

// get returns the watch for key; arm is true when the caller must set it (send its read
// with a watch) and report the outcome with armed.
func (ws *watches) get(key watchKey) (w *Watch, arm bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.lookup(key); w != nil {
		return w, false
	}
	w = &Watch{ws: ws}
	ws.store(key, w)
	return w, true
}

// armedCh returns a channel closed once the request that sets w was answered.
func (ws *watches) armedCh(w *Watch) <-chan struct{} {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.armed {
		return closedCh
	}
	x := w.extra()
	if x.armWait == nil {
		x.armWait = make(chan struct{})
	}
	return x.armWait
}

// state returns the outcome of the request that set w (once armedCh is closed) and
// whether w fired.
func (ws *watches) state(w *Watch) (armErr error, isFired bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.x != nil {
		armErr = w.x.armErr
	}
	return armErr, w.fired
}

// armed records the outcome of the request that set w (the first outcome recorded
// counts), and ech, go-zookeeper's channel for the watch it set. On an error no watch
// was set: w is forgotten, and those waiting to share it try again.
//
// From now on, an event of w's kind fires w from notify: go-zookeeper registered its
// watch when the reply came, on its receive loop, before the events notify hears after
// this. An event that came while the request was in flight (pending) fires w only if
// the server answered the request before the change: then go-zookeeper's channel gets
// the event (from the receive loop, right after notify). If it came before the answer,
// the read saw the change and the watch waits for the next one, which the channel gets
// too. Only that rare case costs a goroutine, until the channel fires or the client
// closes.
func (ws *watches) armed(key watchKey, w *Watch, set watchSet, err error) {
	ws.mu.Lock()
	if w.armed {
		ws.mu.Unlock()
		return
	}
	w.armed = true
	if err != nil {
		w.extra().armErr = err
	}
	if w.x != nil && w.x.armWait != nil {
		close(w.x.armWait)
	}
	if err != nil {
		ws.forget(key, w)
		ws.mu.Unlock()
		return
	}
	if w.x != nil && len(w.x.early) > 0 {
		early := w.x.early
		w.x.early = nil
		for _, e := range early {
			if e.seq > set.seq && !w.fired { // it came after the reply that set w
				f := ws.fireLocked(key, w, e.ev)
				ws.mu.Unlock()
				f.tell()
				return
			}
		}
	}
	ech := set.ch
	follow := w.pending && ech != nil && !w.fired
	var done chan struct{}
	if follow {
		if w.done == nil {
			w.done = make(chan struct{})
		}
		done = w.done
	}
	ws.mu.Unlock()
	if follow {
		go func() {
			select {
			case ev, ok := <-ech:
				if ok {
					ws.fire(key, w, ev)
				}
			case <-done: // fired by notify (a later event) or closeAll
			case <-ws.closed:
			}
		}()
	}
}

// fire fires w with ev, unless it fired already.
func (ws *watches) fire(key watchKey, w *Watch, ev zk.Event) {
	ws.mu.Lock()
	if w.fired {
		ws.mu.Unlock()
		return
	}
	f := ws.fireLocked(key, w, ev)
	ws.mu.Unlock()
	f.tell()
}

// kindsFired are the kinds of watch an event fires, as ZooKeeper (and go-zookeeper)
// deliver them.
func kindsFired(t zk.EventType) []watchKind {
	switch t {
	case zk.EventNodeCreated:
		return []watchKind{watchExists}
	case zk.EventNodeDataChanged:
		return []watchKind{watchExists, watchData}
	case zk.EventNodeChildrenChanged:
		return []watchKind{watchChildren}
	case zk.EventNodeDeleted, zk.EventNotWatching:
		return []watchKind{watchExists, watchData, watchChildren}
	}
	return nil
}

// notify fires the watches of conn that ev ends: those of the kinds it fires whose
// request was answered before it (see armed); it runs on go-zookeeper's receive loop,
// before go-zookeeper delivers ev to its own watch channels, and tells their handlers
// there. A watch whose request is still in flight is only marked pending: the event may
// be for a change its own read saw.
func (ws *watches) notify(conn zkConn, ev zk.Event) {
	kinds := kindsFired(ev.Type)
	if len(kinds) == 0 {
		return
	}
	var fs [3]fired
	n := 0
	ws.mu.Lock()
	for _, k := range kinds {
		key := watchKey{conn, k, ev.Path}
		w := ws.lookup(key)
		if w == nil {
			continue
		}
		if !w.armed {
			w.pending = true
			continue
		}
		fs[n] = ws.fireLocked(key, w, ev)
		n++
	}
	ws.mu.Unlock()
	for _, f := range fs[:n] {
		f.tell()
	}
}

// watchSet is what a read with a watch gives the registry (armed): go-zookeeper's channel
// for the watch it set, or our own connection's place of the reply among its events.
type watchSet struct {
	ch  <-chan zk.Event
	seq uint64
}

// orderedEvent is an event of our own connection and its place (wire.Notice.Seq).
type orderedEvent struct {
	ev  Event
	seq uint64
}

// notifyEnded is notify for our own connection, which tells with each event the
// one-shot watches it ended (ended, by the registry's kind) and its place among the
// replies of watched reads (seq). A watch of an ended kind fires; one whose request's
// answer is not recorded yet (armed) fires once it is, if the event came after that
// answer (an event before it ended an older watch of the same kind, and the read saw
// its change).
func (ws *watches) notifyEnded(conn zkConn, ev zk.Event, seq uint64, ended [numWatchKinds]bool) {
	var fs [numWatchKinds]fired
	n := 0
	ws.mu.Lock()
	for _, k := range kindsFired(ev.Type) {
		if !ended[k] {
			continue
		}
		key := watchKey{conn, k, ev.Path}
		w := ws.lookup(key)
		if w == nil {
			continue
		}
		if !w.armed {
			x := w.extra()
			x.early = append(x.early, orderedEvent{ev, seq})
			continue
		}
		fs[n] = ws.fireLocked(key, w, ev)
		n++
	}
	ws.mu.Unlock()
	for _, f := range fs[:n] {
		f.tell()
	}
}

// endConn fires every watch of conn with EventNotWatching: the client closed that
// connection (a session it replaced). go-zookeeper's Close ends its watches itself
// (through notify); our own connection's Close tells nothing of them.
func (ws *watches) endConn(conn zkConn) {
	ws.mu.Lock()
	cw := ws.m[conn]
	var fs []fired
	if cw != nil {
		for k, m := range cw {
			for p, w := range m {
				key := watchKey{conn, watchKind(k), p}
				fs = append(fs, ws.fireLocked(key, w, Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: p, Err: zk.ErrClosing}))
			}
		}
	}
	ws.mu.Unlock()
	for _, f := range fs {
		f.tell()
	}
}

// closeAll fires every watch with EventNotWatching: the client is closed.
func (ws *watches) closeAll() {
	ws.mu.Lock()
	if !isClosed(ws.closed) {
		close(ws.closed)
	}
	fs := make([]fired, 0, ws.n)
	for conn, cw := range ws.m {
		for k, m := range cw {
			for p, w := range m {
				key := watchKey{conn, watchKind(k), p}
				fs = append(fs, ws.fireLocked(key, w, Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: p, Err: ErrClosed}))
			}
		}
	}
	ws.mu.Unlock()
	for _, f := range fs {
		f.tell()
	}
}

// armedAny reports whether a watch was set (its request answered without error) and has
// not fired: go-zookeeper then holds it too and sets it again after a reconnection.
func (ws *watches) armedAny() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, cw := range ws.m {
		for _, m := range cw {
			for _, w := range m {
				if w.armed && (w.x == nil || w.x.armErr == nil) {
					return true
				}
			}
		}
	}
	return false
}

// len returns how many watches are set and have not fired.
func (ws *watches) len() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.n
}

// watchedRead sends one read of the node at full that also watches it, through the
// client's registry: the first caller sets the watch (read(true)); the others wait until
// that request was answered, so that the watch was set on the server before their own read
// (read(false)) is sent, and share it. Whatever changes after their read fires it.
func watchedRead[T any](c *Client, ctx context.Context, conn zkConn, op, full string, kind watchKind, read func(watch bool) (T, watchSet, error)) (T, *Watch, error) {
	var zero T
	key := watchKey{conn, kind, full}
	for {
		w, arm := c.watches.get(key)
		if arm {
			// The outcome is recorded in the request's goroutine, so also when the caller
			// stopped waiting for it.
			v, err := callAt(c, ctx, op, full, func() (T, error) {
				v, set, err := read(true)
				c.watches.armed(key, w, set, err)
				return v, err
			}, nil)
			if errors.Is(err, ErrClosed) {
				c.watches.armed(key, w, watchSet{}, err) // the request may never have been sent
			}
			if err != nil {
				return v, nil, err
			}
			return v, w, nil
		}
		select {
		case <-c.watches.armedCh(w):
		case <-ctx.Done():
			return zero, nil, ctx.Err()
		case <-c.closing:
			return zero, nil, ErrClosed
		}
		if armErr, fired := c.watches.state(w); armErr != nil || fired {
			continue // not set, or fired already: set a new one
		}
		v, err := callAt(c, ctx, op, full, func() (T, error) { v, _, err := read(false); return v, err }, nil)
		if err != nil {
			return v, nil, err
		}
		if _, fired := c.watches.state(w); fired {
			// It fired while our read was in flight, maybe for a change the read saw: the
			// server sends an event before the reply of a read that follows the change, and
			// notify fires w on the receive loop before that reply reaches us. Set a new
			// watch and read again (for a caller that shares the watch).
			continue
		}
		return v, w, nil
	}
}

// Watches returns how many watches the client has set that have not fired yet: at most
// one per node and kind (data, exists, children), however many callers wait on them.
func (c *Client) Watches() int { return c.watches.len() }
