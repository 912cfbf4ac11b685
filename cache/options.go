package cache

import "math"

// StartMode says what Start does about the data that is already there when the cache
// starts (Curator's PathChildrenCache.StartMode).
type StartMode int

const (
	// NormalStart returns from Start at once; the nodes already there are reported as
	// added (or created) as the cache reads them, with no Initialized event.
	NormalStart StartMode = iota + 1
	// BuildInitialCache makes Start read everything first and return once the cache holds
	// it (or ctx ends); the nodes already there are not reported as events.
	BuildInitialCache
	// PostInitializedEvent returns from Start at once, reports the nodes already there as
	// added (or created) and then posts an Initialized event once the first full read is
	// in.
	PostInitializedEvent
)

// String names the mode as Curator does.
func (m StartMode) String() string {
	switch m {
	case NormalStart:
		return "NORMAL"
	case BuildInitialCache:
		return "BUILD_INITIAL_CACHE"
	case PostInitializedEvent:
		return "POST_INITIALIZED_EVENT"
	}
	return "UNKNOWN"
}

// Selector prunes a TreeCache (Curator's TreeCacheSelector). Both methods get full paths
// (without the client's namespace) and run on the cache's goroutine; they must be fast
// and must not call the cache.
type Selector interface {
	// TraverseChildren reports whether the cache should read and follow the children of
	// the node at path. A node whose children are not traversed is still cached itself.
	TraverseChildren(path string) bool
	// AcceptChild reports whether the cache should hold the node at path (a child of a
	// traversed node). A node that is not accepted is not cached, not watched and not
	// descended into. The cache's root is always accepted.
	AcceptChild(path string) bool
}

// SelectorFuncs is a Selector made of two functions; a nil function accepts everything.
type SelectorFuncs struct {
	Traverse func(path string) bool
	Accept   func(path string) bool
}

// TraverseChildren calls s.Traverse, or returns true when it is nil.
func (s SelectorFuncs) TraverseChildren(path string) bool {
	return s.Traverse == nil || s.Traverse(path)
}

// AcceptChild calls s.Accept, or returns true when it is nil.
func (s SelectorFuncs) AcceptChild(path string) bool {
	return s.Accept == nil || s.Accept(path)
}

type options struct {
	mode      StartMode
	cacheData bool
	maxDepth  int
	selector  Selector
	keep      bool // keep the nodes after Close (CuratorCache's DoNotClearOnClose)
	errs      []error
}

func defaultOptions(mode StartMode) options {
	return options{mode: mode, cacheData: true, maxDepth: math.MaxInt32}
}

// NodeOption configures a NodeCache.
type NodeOption interface{ applyNode(*options) }

// PathChildrenOption configures a PathChildrenCache.
type PathChildrenOption interface{ applyPathChildren(*options) }

// TreeOption configures a TreeCache.
type TreeOption interface{ applyTree(*options) }

type startModeOption StartMode

func (o startModeOption) apply(opts *options)             { opts.mode = StartMode(o) }
func (o startModeOption) applyNode(opts *options)         { o.apply(opts) }
func (o startModeOption) applyPathChildren(opts *options) { o.apply(opts) }
func (o startModeOption) applyTree(opts *options)         { o.apply(opts) }

// WithStartMode sets what Start does with the data already there. The default is
// NormalStart for NodeCache and PathChildrenCache and PostInitializedEvent for TreeCache,
// as in Curator. The option works with all three caches.
func WithStartMode(m StartMode) interface {
	NodeOption
	PathChildrenOption
	TreeOption
} {
	return startModeOption(m)
}

type cacheDataOption bool

func (o cacheDataOption) applyPathChildren(opts *options) { opts.cacheData = bool(o) }
func (o cacheDataOption) applyTree(opts *options)         { opts.cacheData = bool(o) }

// WithCacheData says whether the cache keeps node data (true, the default) or only each
// node's Stat (false: ChildData.Data is nil, and changes are still detected by mzxid). It
// works with PathChildrenCache and TreeCache.
func WithCacheData(on bool) interface {
	PathChildrenOption
	TreeOption
} {
	return cacheDataOption(on)
}

type treeOption func(*options)

func (o treeOption) applyTree(opts *options) { o(opts) }

// WithMaxDepth limits a TreeCache to the nodes at most depth levels below its root: 0
// caches the root alone, 1 the root and its children. The default is no limit. A negative
// depth is an error.
func WithMaxDepth(depth int) TreeOption {
	return treeOption(func(o *options) {
		if depth < 0 {
			o.errs = append(o.errs, errorf("max depth %d is negative", depth))
			return
		}
		o.maxDepth = depth
	})
}

// WithSelector prunes a TreeCache with s. The default caches every node.
func WithSelector(s Selector) TreeOption {
	return treeOption(func(o *options) {
		if s == nil {
			o.errs = append(o.errs, errorf("nil selector"))
			return
		}
		o.selector = s
	})
}
