package cache

import "github.com/zoocurator/zoocurator/framework"

// watchKind is the kind of ZooKeeper watch the cache set.
type watchKind uint8

const (
	dataWatch  watchKind = iota // getData with watch
	childWatch                  // getChildren with watch
	existWatch                  // exists with watch (the root, while it is missing)
)

type watchKey struct {
	path string
	kind watchKind
}

// watch is one armed ZooKeeper watch. It is the framework watch's handler: the client
// tells it when the watch fires, on its own goroutine, and it queues that for the engine
// goroutine. No channel, goroutine or select case per watch: an armed watch costs this
// struct, its entry in the engine's armed map and the framework's watch.
type watch struct {
	e   *engine
	key watchKey
	w   *framework.Watch
}

// WatchFired queues the event for the engine; it must not block (framework.WatchHandler).
func (w *watch) WatchFired(_ *framework.Watch, ev framework.Event) {
	if isClosed(w.e.stop) {
		return
	}
	w.e.pushInput(input{w: w, ev: ev})
}
