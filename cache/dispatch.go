package cache

import (
	"log/slog"
	"sync"
	"sync/atomic"
)

// dispatcher calls listeners one event at a time, in order, on its own goroutine.
type dispatcher struct {
	log *slog.Logger
	sig chan struct{}

	mu        sync.Mutex
	queue     []Event
	listeners []*listener
}

type listener struct {
	fn      func(Event)
	removed atomic.Bool
}

func newDispatcher(log *slog.Logger) *dispatcher {
	return &dispatcher{log: log, sig: make(chan struct{}, 1)}
}

func (d *dispatcher) add(fn func(Event)) (remove func()) {
	if fn == nil {
		return func() {}
	}
	l := &listener{fn: fn}
	d.mu.Lock()
	d.listeners = append(d.listeners, l)
	d.mu.Unlock()
	return func() {
		l.removed.Store(true)
		d.mu.Lock()
		defer d.mu.Unlock()
		for i, x := range d.listeners {
			if x == l {
				d.listeners = append(d.listeners[:i:i], d.listeners[i+1:]...)
				return
			}
		}
	}
}

func (d *dispatcher) push(ev Event) {
	d.mu.Lock()
	d.queue = append(d.queue, ev)
	d.mu.Unlock()
	select {
	case d.sig <- struct{}{}:
	default:
	}
}

// run delivers events until stop is closed, or until engineDone is closed and the queue
// is empty.
func (d *dispatcher) run(stop, engineDone <-chan struct{}) {
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			d.queue = nil
			d.mu.Unlock()
			select {
			case <-stop:
				return
			case <-d.sig:
				continue
			case <-engineDone:
				d.mu.Lock()
				empty := len(d.queue) == 0
				d.mu.Unlock()
				if empty {
					return
				}
				continue
			}
		}
		ev := d.queue[0]
		d.queue[0] = Event{}
		d.queue = d.queue[1:]
		ls := append([]*listener(nil), d.listeners...)
		d.mu.Unlock()
		for _, l := range ls {
			if isClosed(stop) {
				return
			}
			if !l.removed.Load() {
				d.call(l, ev.clone())
			}
		}
	}
}

func (d *dispatcher) call(l *listener, ev Event) {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("listener panicked", "component", "cache", "event", ev.String(), "panic", r)
		}
	}()
	l.fn(ev)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
