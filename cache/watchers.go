package cache

import (
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/zoocurator/zoocurator/framework"
)

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

// watch is one armed ZooKeeper watch: the client closes w.Done() when it fires.
type watch struct {
	key watchKey
	w   *framework.Watch
}

// shardSize is how many watches one goroutine waits on.
const shardSize = 256

// watchers waits on many one-shot watch channels with few goroutines: each shard
// goroutine selects (reflect.Select) over up to shardSize of them. A fired watch is handed
// to fire, which must not block.
type watchers struct {
	stop  <-chan struct{}
	cdone <-chan struct{}
	fire  func(*watch, framework.Event)
	wg    *sync.WaitGroup

	mu     sync.Mutex
	shards []*shard
}

type shard struct {
	count   atomic.Int32 // watches given to this shard and not fired yet
	mu      sync.Mutex
	pending []*watch
	wake    chan struct{}
}

// add hands w to a shard with room, starting a new one when all are full. It must be
// called by a goroutine counted in wg (the cache's own), so that wg.Add never races with
// Close's Wait at zero.
func (ws *watchers) add(w *watch) {
	ws.mu.Lock()
	var s *shard
	for _, x := range ws.shards {
		if x.count.Load() < shardSize {
			s = x
			break
		}
	}
	if s == nil {
		s = &shard{wake: make(chan struct{}, 1)}
		ws.shards = append(ws.shards, s)
		ws.wg.Add(1)
		go ws.run(s)
	}
	s.count.Add(1)
	ws.mu.Unlock()

	s.mu.Lock()
	s.pending = append(s.pending, w)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

const fixedCases = 3 // stop, client done, wake

func (ws *watchers) run(s *shard) {
	defer ws.wg.Done()
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ws.stop)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ws.cdone)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.wake)},
	}
	var active []*watch
	for {
		i, _, _ := reflect.Select(cases)
		switch i {
		case 0, 1:
			return
		case 2:
			s.mu.Lock()
			p := s.pending
			s.pending = nil
			s.mu.Unlock()
			for _, w := range p {
				active = append(active, w)
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.w.Done())})
			}
			continue
		}
		j := i - fixedCases
		w := active[j]
		last := len(active) - 1
		active[j], active[last] = active[last], nil
		active = active[:last]
		cases[i] = cases[last+fixedCases]
		cases[last+fixedCases] = reflect.SelectCase{}
		cases = cases[:last+fixedCases]
		s.count.Add(-1)
		ws.fire(w, w.w.Event())
	}
}
