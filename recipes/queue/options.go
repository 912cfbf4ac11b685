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
	// others, may take the requeued item at once. There is no bound on the number of
	// requeues unless WithMaxAttempts sets one.
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

	maxAttempts    int
	maxAttemptsSet bool
	deadLetter     string
	deadLetterSet  bool
}

// WithLockPath makes consumption safe, as Curator's QueueBuilder.lockPath does: before
// handling a node a consumer creates the ephemeral node lockPath/<item node name>, and
// removes the item only after its handler returned. A consumer that dies mid-item leaves
// the item in the queue (its lock node goes with its session, a session timeout or more
// after its death) and another consumer takes it, as its next item: an item is delivered
// at least once. The default is no lock path: the item node is
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

// WithMaxAttempts bounds the requeues of a failing item (ErrorMode Requeue, with a lock
// path; the constructor refuses it otherwise): when its handler has failed n times in a
// row in this consumer, the item goes to the dead-letter path (WithDeadLetterPath) or,
// without one, is left in the queue where it is (its lock node deleted; another consumer
// may take it) and Consume returns the handler's error. Either way the *HandlerError
// matches ErrAttemptsExhausted, and the item's count starts again.
//
// The count is per Queue value (goroutines calling Consume on one value share it; two
// values, in one process or two, count apart): Curator's item format carries no count,
// and a Go consumer shares the queue with Curator's and with other processes, so each
// value counts the failures it saw; c values may run an item up to c×(n-1)+1 times. An item is known across its requeues
// (each makes a new node) by its node name without the sequence number and its data:
// two items put with the same bytes (and the same id, priority or due time) share a
// count. A success of the item forgets its count, and up to 1024 failing items are
// remembered (more start the counts again). Another consumer that takes the requeued
// item meanwhile is not counted here, so an item may run more than n times overall.
// n must be at least 1 (1: no requeue). The default is no bound.
func WithMaxAttempts(n int) Option {
	return func(o *options) { o.maxAttempts, o.maxAttemptsSet = n, true }
}

// WithDeadLetterPath sets where WithMaxAttempts puts an item it gives up on: the item's
// node is deleted (bound to the node read before the handler ran) and created under path
// as a persistent sequential node with the same name prefix and the same bytes, and the
// lock node deleted, in one transaction, so that the item is never lost or duplicated by
// the move, also when its request or answer is lost with the connection (a resend finds
// the item gone and applies nothing). The dead-letter path is thus a queue of the same
// kind, in Curator's format: New (NewID, ...) on it reads or consumes what was put there,
// and so does a Curator queue. It is made (with its parents, as containers) when first
// needed. Consume reports each move (a *HandlerError with DeadLettered set, matching
// ErrAttemptsExhausted) to the WithErrorListener function and goes on. It needs
// WithMaxAttempts, and differs from the queue and lock paths. The default is none.
func WithDeadLetterPath(path string) Option {
	return func(o *options) { o.deadLetter, o.deadLetterSet = path, true }
}
