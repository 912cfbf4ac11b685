package queue

// ErrorMode says what a consumer with a lock path does with a node when its handler
// returns an error: Curator's ErrorMode.
type ErrorMode int

const (
	// Requeue puts the node back at the end of the queue (same name prefix, new
	// sequence number) and stops handling its remaining items: a node of several items
	// is delivered again whole, so items handled before the failure are delivered twice.
	// The default, as in Curator. Unlike Curator, a consumer that requeued an item backs
	// off before its next take: 100 ms after the item's first failure, doubling with each
	// failure of the same item (same name prefix and data) in a row, up to 5 s; a success
	// of that item forgets its failures (counted per queue value). The back-off is the
	// consumer's own: a Consume call waits it out before its next take, a ConsumeOne that
	// requeued an item before it returns (its context ending cuts the wait short); other
	// consumers, other calls on the same queue value among them, in this process or
	// others, may take the requeued item at once; and
	// there is no bound on the number of requeues: a handler that must give up on an
	// item returns nil (or uses ErrorMode Delete).
	Requeue ErrorMode = iota
	// Delete removes the node anyway; its remaining items are still handed to the
	// handler.
	Delete
)

// Option configures a distributed queue (Queue, IDQueue, PriorityQueue, DelayQueue).
type Option func(*options)

type options struct {
	lockPath  string
	maxItems  int
	errorMode ErrorMode
	onError   func(error)
}

// WithLockPath makes consumption safe, as Curator's QueueBuilder.lockPath does: before
// handling a node a consumer creates the ephemeral node lockPath/<item node name>, and
// removes the item only after its handler returned. A consumer that dies mid-item leaves
// the item in the queue (its lock node goes with its session) and another consumer takes
// it: an item is delivered at least once. The default is no lock path: the item node is
// deleted before the handler runs (at most once: an item whose consumer dies is lost).
func WithLockPath(lockPath string) Option { return func(o *options) { o.lockPath = lockPath } }

// WithMaxItems bounds the queue: Put waits (honouring its context) while the queue path
// has maxItems children or more. The bound is approximate, as Curator's: producers that
// look at the same moment may all put. The default is no bound.
func WithMaxItems(n int) Option { return func(o *options) { o.maxItems = n } }

// WithErrorMode sets what happens to a node whose handler failed (only with a lock
// path; without one the node is already gone). The default is Requeue.
func WithErrorMode(m ErrorMode) Option { return func(o *options) { o.errorMode = m } }

// WithErrorListener sets a function Consume and ConsumeOne call, on the caller's goroutine
// (so one call at a time per consumer; keep it short), with each error they get over
// while they keep consuming: a *BadItemError, a *HandlerError, an error matching
// ErrNotRemoved or ErrMaybeGone, a ZooKeeper error they retry after. The default drops
// them.
func WithErrorListener(fn func(error)) Option { return func(o *options) { o.onError = fn } }
