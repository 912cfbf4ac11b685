package leader

import (
	"context"
	"fmt"
	"sync"
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
	done  chan struct{}
	once  sync.Once
}

// newTerm starts a term on node that ends when loss closes (or end is called).
func newTerm(node string, czxid, sid int64, loss <-chan struct{}) *Term {
	t := &Term{node: node, czxid: czxid, sid: sid, done: make(chan struct{})}
	go func() {
		select {
		case <-loss:
			t.end()
		case <-t.done:
		}
	}()
	return t
}

// end ends the term: Done is closed when it returns.
func (t *Term) end() { t.once.Do(func() { close(t.done) }) }

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
func (t *Term) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := func() { cancel(context.Canceled) }
	lost := fmt.Errorf("%w: %s", ErrLeadershipLost, t.node)
	if isClosed(t.done) {
		cancel(lost)
		return ctx, stop
	}
	go func() {
		select {
		case <-t.done:
			cancel(lost)
		case <-ctx.Done():
		}
	}()
	return ctx, stop
}
