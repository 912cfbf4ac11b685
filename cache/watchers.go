package cache

import "github.com/zoocurator/zoocurator/framework"

// watchKind is the kind of ZooKeeper watch the cache set.
type watchKind uint8

const (
	dataWatch  watchKind = iota // getData with watch
	childWatch                  // getChildren with watch
	existWatch                  // exists with watch (the root, while it is missing)
	numWatchKinds
)

// pathWatch is the watches the cache armed on one path, one per kind, owned by the engine
// goroutine (w) but for e and path, which do not change. It is the handler of each of
// them, under one type per kind (dataHandler, childHandler, existHandler: the same pointer,
// so that the handler knows the kind without a field or an allocation of its own): the
// client tells it when one fires, on its own goroutine, and it queues that for the engine
// goroutine. No channel, goroutine or select case per watch: the armed watches of a path
// cost this struct (its path shared with the cached node's), its entry in the engine's
// armed map and the framework's watches.
type pathWatch struct {
	e    *engine
	path string
	w    [numWatchKinds]*framework.Watch
}

// idle reports whether no watch of the path is armed.
func (pw *pathWatch) idle() bool { return pw.w == [numWatchKinds]*framework.Watch{} }

// handler returns pw as the handler of its watch of kind k.
func (pw *pathWatch) handler(k watchKind) framework.WatchHandler {
	switch k {
	case dataWatch:
		return (*dataHandler)(pw)
	case childWatch:
		return (*childHandler)(pw)
	default:
		return (*existHandler)(pw)
	}
}

// fired queues a fired watch for the engine; it must not block (framework.WatchHandler).
func (pw *pathWatch) fired(k watchKind, fw *framework.Watch, ev framework.Event) {
	if isClosed(pw.e.stop) {
		return
	}
	pw.e.pushInput(input{pw: pw, kind: k, fw: fw, ev: ev})
}

type (
	dataHandler  pathWatch
	childHandler pathWatch
	existHandler pathWatch
)

func (h *dataHandler) WatchFired(fw *framework.Watch, ev framework.Event) {
	(*pathWatch)(h).fired(dataWatch, fw, ev)
}

func (h *childHandler) WatchFired(fw *framework.Watch, ev framework.Event) {
	(*pathWatch)(h).fired(childWatch, fw, ev)
}

func (h *existHandler) WatchFired(fw *framework.Watch, ev framework.Event) {
	(*pathWatch)(h).fired(existWatch, fw, ev)
}
