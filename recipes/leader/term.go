package leader

import (
	"context"
	"fmt"
	"sync"

	"github.com/zoocurator/zoocurator/framework"
)

// Term is one uninterrupted period of leadership of a Latch. It ends (Done closes) when
// leadership may be lost: on Suspended or Lost under the client's standard error policy,
// on Lost only under the session policy, when the session changes, when the latch node
// goes, and on Close. A new term begins when leadership is regained. Its methods are safe
// for concurrent use.
//
// ZooKeeper cannot promise more than that: a process that pauses can outlive its session
// and still believe it leads. Hand the Token to the resource you protect so that it can
// reject an older leader.
type Term struct {
	node  string
	czxid int64
	sid   int64
	// client is the latch's: the term's guard names the node with its namespace and chroot.
	client *framework.Client
	done   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	ended   bool
	nextCtx uint64
	cancels map[uint64]context.CancelCauseFunc // contexts of the term, cancelled by end
}

// newTerm starts a term on node that ends when loss closes (or end is called). When loss
// ends it, lost (if not nil) is called with the term once it has ended, on the term's
// goroutine.
func newTerm(node string, czxid, sid int64, loss <-chan struct{}, lost func(*Term)) *Term {
	t := &Term{node: node, czxid: czxid, sid: sid, done: make(chan struct{})}
	go func() {
		select {
		case <-loss:
			t.end()
			if lost != nil {
				lost(t)
			}
		case <-t.done:
		}
	}()
	return t
}

// end ends the term: when it returns, every context of the term (Context) is cancelled
// and Done is closed. The contexts are cancelled here, on the caller's goroutine and
// before Done closes, so that whoever learns of the end afterwards — the latch's
// listeners, a reader of Done — finds them cancelled already.
func (t *Term) end() {
	t.once.Do(func() {
		t.mu.Lock()
		t.ended = true
		cancels := t.cancels
		t.cancels = nil
		t.mu.Unlock()
		lost := t.lostErr()
		for _, cancel := range cancels {
			cancel(lost)
		}
		close(t.done)
	})
}

func (t *Term) lostErr() error { return fmt.Errorf("%w: %s", ErrLeadershipLost, t.node) }

// Done returns a channel that is closed when the term ends: leadership may be lost, or
// was given up. Work done as leader should stop when it closes.
func (t *Term) Done() <-chan struct{} { return t.done }

// Node returns the path of the latch node that leads in this term.
func (t *Term) Node() string { return t.node }

// Token returns the term's fencing token: the latch node's czxid shifted left by 8 bits,
// the same scale as a mutex lease's token. It strictly increases from one leader to the
// next on the path (a later leader has a later node), so a resource that remembers the
// highest token it has seen can refuse a stale leader. Two terms on the same node (the
// leader kept its node through a brief disconnection) share the token: nobody else led in
// between. It needs no request; it fails with ErrLeadershipLost once the term has ended.
func (t *Term) Token(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if isClosed(t.done) {
		return 0, fmt.Errorf("%w: %s", ErrLeadershipLost, t.node)
	}
	return t.czxid << 8, nil
}

// Context returns a context derived from parent that is cancelled when the term ends,
// with the cause ErrLeadershipLost (context.Cause); on an ended term it is cancelled
// before it is returned. Call cancel when done with it.
//
// The context is cancelled before Done closes and before the latch's listeners are told
// that leadership ended: a task that checks its context before each step cannot run a
// step after a listener heard the news. That narrows the window, it does not close it:
// a process paused between its check and its write still writes late. Only the resource
// can refuse that write — see Token.
func (t *Term) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		cancel(t.lostErr())
		return ctx, func() { cancel(context.Canceled) }
	}
	if t.cancels == nil {
		t.cancels = map[uint64]context.CancelCauseFunc{}
	}
	id := t.nextCtx
	t.nextCtx++
	t.cancels[id] = cancel
	t.mu.Unlock()
	// Forget the context once it ends for any reason (its parent, its cancel, the term).
	context.AfterFunc(ctx, func() {
		t.mu.Lock()
		delete(t.cancels, id)
		t.mu.Unlock()
	})
	return ctx, func() { cancel(context.Canceled) }
}
