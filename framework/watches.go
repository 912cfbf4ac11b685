package framework

import (
	"context"
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Watch is a one-time watch on a node, set by GetDataW, ExistsW or ChildrenW. The client
// holds at most one watch per node and kind (data, exists, children) at a time and hands
// it to every caller that asks for that watch before it fires, however many callers and
// calls: go-zookeeper cannot remove a watch, so a caller that stops waiting (its context
// ended) leaves nothing behind that a later call adds to. A Watch is safe for concurrent
// use; any number of goroutines may wait on Done.
type Watch struct {
	done chan struct{}
	ev   Event // set before done is closed

	armed  chan struct{} // closed once the request that set the watch was answered
	armErr error         // set before armed is closed; not nil: no watch was set

	// pending: an event of this kind of watch came for the node while the request that
	// sets the watch was in flight. Whether it fires the watch depends on whether the
	// server answered the request before or after the change, which only go-zookeeper's
	// own watch channel tells (see watches.armed). Guarded by watches.mu.
	pending bool
}

// Done returns a channel that is closed when the watch fires: the node changed as the
// kind of watch says, or the watch ended because the session did or the client closed
// (then Event's Type is EventNotWatching). It fires once. Done of a nil *Watch is nil: a
// select waits on it forever, as on a nil channel.
func (w *Watch) Done() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.done
}

// Event returns what fired the watch (its Path is the server's path, with the
// namespace); the zero Event before Done is closed.
func (w *Watch) Event() Event {
	if w == nil {
		return Event{}
	}
	select {
	case <-w.done:
		return w.ev
	default:
		return Event{}
	}
}

type watchKind uint8

const (
	watchData watchKind = iota
	watchExists
	watchChildren
)

// watchKey names a watch: the go-zookeeper connection (a session) it was set on, its kind
// and the server path.
type watchKey struct {
	conn *zk.Conn
	kind watchKind
	path string
}

// watches is the client's registry of the watches that are set and have not fired. It is
// fed the node events of every connection by the event callback (go-zookeeper's receive
// loop): it must not block.
type watches struct {
	mu     sync.Mutex
	m      map[watchKey]*Watch
	closed chan struct{} // closed by closeAll
}

func newWatches() *watches { return &watches{m: map[watchKey]*Watch{}, closed: make(chan struct{})} }

// get returns the watch for key; arm is true when the caller must set it (send its read
// with a watch) and report the outcome with armed.
func (ws *watches) get(key watchKey) (w *Watch, arm bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.m[key]; w != nil {
		return w, false
	}
	w = &Watch{done: make(chan struct{}), armed: make(chan struct{})}
	ws.m[key] = w
	return w, true
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
func (ws *watches) armed(key watchKey, w *Watch, ech <-chan zk.Event, err error) {
	ws.mu.Lock()
	if isClosed(w.armed) {
		ws.mu.Unlock()
		return
	}
	w.armErr = err
	close(w.armed)
	if err != nil {
		if ws.m[key] == w {
			delete(ws.m, key)
		}
		ws.mu.Unlock()
		return
	}
	follow := w.pending && ech != nil && !isClosed(w.done)
	ws.mu.Unlock()
	if follow {
		go func() {
			select {
			case ev, ok := <-ech:
				if ok {
					ws.fire(key, w, ev)
				}
			case <-w.done: // fired by notify (a later event) or closeAll
			case <-ws.closed:
			}
		}()
	}
}

// fire fires w with ev, unless it fired already.
func (ws *watches) fire(key watchKey, w *Watch, ev zk.Event) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if isClosed(w.done) {
		return
	}
	if ws.m[key] == w {
		delete(ws.m, key)
	}
	w.ev = ev
	close(w.done)
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
// before go-zookeeper delivers ev to its own watch channels. A watch whose request is
// still in flight is only marked pending: the event may be for a change its own read
// saw (issue 28.19).
func (ws *watches) notify(conn *zk.Conn, ev zk.Event) {
	kinds := kindsFired(ev.Type)
	if len(kinds) == 0 {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, k := range kinds {
		key := watchKey{conn, k, ev.Path}
		w := ws.m[key]
		if w == nil {
			continue
		}
		if !isClosed(w.armed) {
			w.pending = true
			continue
		}
		delete(ws.m, key)
		w.ev = ev
		close(w.done)
	}
}

// closeAll fires every watch with EventNotWatching: the client is closed.
func (ws *watches) closeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !isClosed(ws.closed) {
		close(ws.closed)
	}
	for key, w := range ws.m {
		delete(ws.m, key)
		w.ev = Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: key.path, Err: ErrClosed}
		close(w.done)
	}
}

// armedAny reports whether a watch was set (its request answered without error) and has
// not fired: go-zookeeper then holds it too and sets it again after a reconnection.
func (ws *watches) armedAny() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, w := range ws.m {
		if isClosed(w.armed) && w.armErr == nil {
			return true
		}
	}
	return false
}

// len returns how many watches are set and have not fired.
func (ws *watches) len() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.m)
}

// watchedRead sends one read of the node at full that also watches it, through the
// client's registry: the first caller sets the watch (read(true)); the others wait until
// that request was answered, so that the watch was set on the server before their own read
// (read(false)) is sent, and share it. Whatever changes after their read fires it.
func watchedRead[T any](c *Client, ctx context.Context, conn *zk.Conn, op, full string, kind watchKind, read func(watch bool) (T, <-chan zk.Event, error)) (T, *Watch, error) {
	var zero T
	key := watchKey{conn, kind, full}
	for {
		w, arm := c.watches.get(key)
		if arm {
			// The outcome is recorded in the request's goroutine, so also when the caller
			// stopped waiting for it.
			v, err := callAt(c, ctx, op, full, func() (T, error) {
				v, ech, err := read(true)
				c.watches.armed(key, w, ech, err)
				return v, err
			}, nil)
			if errors.Is(err, ErrClosed) {
				c.watches.armed(key, w, nil, err) // the request may never have been sent
			}
			if err != nil {
				return v, nil, err
			}
			return v, w, nil
		}
		select {
		case <-w.armed:
		case <-ctx.Done():
			return zero, nil, ctx.Err()
		case <-c.closing:
			return zero, nil, ErrClosed
		}
		if w.armErr != nil || isClosed(w.done) {
			continue // not set, or fired already: set a new one
		}
		v, err := callAt(c, ctx, op, full, func() (T, error) { v, _, err := read(false); return v, err }, nil)
		if err != nil {
			return v, nil, err
		}
		if isClosed(w.done) {
			// It fired while our read was in flight, maybe for a change the read saw: the
			// server sends an event before the reply of a read that follows the change, and
			// notify fires w on the receive loop before that reply reaches us. Set a new
			// watch and read again (issue 28.19, for a caller that shares the watch).
			continue
		}
		return v, w, nil
	}
}

// Watches returns how many watches the client has set that have not fired yet: at most
// one per node and kind (data, exists, children), however many callers wait on them.
func (c *Client) Watches() int { return c.watches.len() }
