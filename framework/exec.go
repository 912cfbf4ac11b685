package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/retry"
)

// fullPath applies the chroot and namespace to a validated caller path.
func (c *Client) fullPath(p string) string {
	if c.prefix == "" {
		return p
	}
	if p == "/" {
		return c.prefix
	}
	return c.prefix + p
}

// relPath strips the chroot and namespace from a server path.
func (c *Client) relPath(p string) string {
	if c.prefix == "" {
		return p
	}
	if p == c.prefix {
		return "/"
	}
	if rest, ok := cutPrefixPath(p, c.prefix); ok {
		return rest
	}
	return p
}

func cutPrefixPath(p, prefix string) (string, bool) {
	if len(p) > len(prefix) && p[:len(prefix)] == prefix && p[len(prefix)] == '/' {
		return p[len(prefix):], true
	}
	return "", false
}

// checkSize refuses a request the server would drop the connection for.
func (c *Client) checkSize(path string, dataLen int) error {
	size := dataLen + len(c.fullPath(path)) + packetOverhead
	if size > c.opts.maxPacket {
		return &DataTooLargeError{Path: path, Size: dataLen, Limit: c.opts.maxPacket - packetOverhead - len(c.fullPath(path))}
	}
	return nil
}

// nameAllowance is the room CheckDataSize leaves for what may be added to a node's name:
// a protected prefix (_c_ and a UUID, 40 bytes) and a sequence number (10 digits).
const nameAllowance = 64

// CheckDataSize returns a *DataTooLargeError (errors.Is(err, ErrDataTooLarge)) when n
// bytes of data written at path, with room for a protected prefix and a sequence number
// added to its name, would not fit the client's packet limit (WithMaxPacketSize). Recipes
// call it when they are made, to refuse data no request could carry; each request checks
// its own size again before it is sent.
func (c *Client) CheckDataSize(path string, n int) error {
	room := c.opts.maxPacket - packetOverhead - nameAllowance - len(c.fullPath(path))
	if n > room {
		return &DataTooLargeError{Path: path, Size: n, Limit: max(room, 0)}
	}
	return nil
}

// withRetry runs op under the retry policy, each attempt after waiting for a connection
// (and, for a ctx from InSession, only in that session).
// The first attempt runs directly; the retry machinery is set up only when it fails with a
// retryable error (most operations succeed the first time).
func (c *Client) withRetry(ctx context.Context, op func(ctx context.Context, conn zkConn) error) error {
	if err := c.usable(); err != nil {
		return err
	}
	sent := false // an attempt went out (InSession: a later one may meet it)
	attempt := func(ctx context.Context) error {
		if err := c.waitConnected(ctx); err != nil {
			return err
		}
		conn := c.loadConn()
		if err := c.ensureNamespace(ctx, conn); err != nil {
			return err
		}
		if err := c.checkSession(ctx, conn, sent); err != nil {
			return err
		}
		sent = true
		return op(ctx, conn)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	start := time.Now()
	firstErr := attempt(ctx)
	if firstErr == nil || !retry.IsRetryable(firstErr, retry.RetriesSessionExpiry(c.opts.retryPolicy)) {
		return firstErr
	}
	first := true
	return retry.Do(ctx, c.opts.retryPolicy, func(ctx context.Context) error {
		if first {
			first = false
			return firstErr // the attempt already made: retry.Do decides about a retry
		}
		return attempt(ctx)
	}, retry.WithTimer(&closingTimer{closing: c.closing}), retry.WithClock(&startedClock{start: start}))
}

// startedClock is withRetry's clock for the policy's elapsed time: its first reading,
// which retry.Do takes as the start of its loop, is when the first attempt (run before
// the loop) started, so that the policy is asked with the time since then, as
// retry.Policy says. Later readings are the time now. It serves one retry.Do.
type startedClock struct {
	start time.Time
	read  bool
}

// Now returns the first attempt's start the first time, then the time now.
func (c *startedClock) Now() time.Time {
	if !c.read {
		c.read = true
		return c.start
	}
	return time.Now()
}

// closingTimer is withRetry's timer for the sleeps between attempts: it fires when the
// sleep is over or as soon as the client closes, so that Close wakes a sleeping operation
// as it wakes every other wait; the attempt that follows returns ErrClosed.
type closingTimer struct {
	closing <-chan struct{}
	c       chan time.Time
	stop    chan struct{} // ends the current sleep's goroutine
}

// Start begins a sleep of d (ending any sleep begun before).
func (t *closingTimer) Start(d time.Duration) {
	t.Stop()
	c, stop, closing := make(chan time.Time, 1), make(chan struct{}), t.closing
	t.c, t.stop = c, stop
	timer := time.NewTimer(d)
	go func() {
		defer timer.Stop()
		select {
		case now := <-timer.C:
			c <- now
		case <-closing:
			c <- time.Now()
		case <-stop:
		}
	}()
}

// Stop ends the current sleep, if any, without firing.
func (t *closingTimer) Stop() {
	if t.stop != nil {
		close(t.stop)
		t.stop = nil
	}
}

// C is the channel the current sleep fires on.
func (t *closingTimer) C() <-chan time.Time { return t.c }

// track counts a goroutine the client must wait for at Close; false once closed.
func (c *Client) track() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// Go runs fn on a goroutine that Close waits for, unless the client is closed already
// (then it returns false and does not run fn). Recipes use it for goroutines that must
// end with the client, such as a lease's watch.
func (c *Client) Go(fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.cbs.spawn(fn)
	return true
}

func (c *Client) usable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if !c.started {
		return ErrNotStarted
	}
	return nil
}

// call sends one request through go-zookeeper, which has no contexts: the request runs on
// a goroutine and call returns when it answers, ctx ends or the client closes. A result
// that arrives after call returned is passed to abandoned (when not nil), which can undo
// it (delete a created node).
func call[T any](c *Client, ctx context.Context, op string, req func() (T, error), abandoned func(T, error)) (T, error) {
	return callAt(c, ctx, op, "", req, abandoned)
}

// callAt is call for a request on the node at fullPath (with chroot and namespace), which
// request observers are told (without them).
func callAt[T any](c *Client, ctx context.Context, op, fullPath string, req func() (T, error), abandoned func(T, error)) (_ T, err error) {
	var zero T
	if !c.track() {
		return zero, ErrClosed
	}
	c.countRequest(op)
	if len(c.opts.requestObservers) > 0 {
		start := time.Now()
		defer func() { c.observeRequest(op, fullPath, start, err) }()
	}
	// One allocation for the call's state; done is closed (never sent on) under mu when the
	// answer is stored, unless the caller gave up first (gone).
	st := &callState[T]{done: make(chan struct{})}
	go func() {
		defer c.wg.Done()
		v, err := req()
		st.mu.Lock()
		if !st.gone {
			st.v, st.err = v, err
			close(st.done)
			st.mu.Unlock()
			return
		}
		st.mu.Unlock()
		if abandoned != nil {
			abandoned(v, err)
		}
	}()
	var stop error
	select {
	case <-st.done:
		return st.v, c.mapErr(st.err)
	case <-ctx.Done():
		stop = ctx.Err()
	case <-c.closing:
		stop = errClosedInFlight // handed to the connection before Close: maybe applied
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.gone = true
	select {
	case <-st.done: // answered just before we gave up
		return st.v, c.mapErr(st.err)
	default:
	}
	return zero, stop
}

// callState is one call's answer, handed from its request's goroutine to the caller.
type callState[T any] struct {
	mu   sync.Mutex
	gone bool          // the caller gave up: the answer goes to abandoned
	done chan struct{} // closed when v and err are set
	v    T
	err  error
}

// mapErr is the package mapErr, but go-zookeeper's "closing" of a connection the client
// replaced (after a simulated Lost) while it stays open is a connection loss, which the
// retry policy retries on the new session.
func (c *Client) mapErr(err error) error {
	if errors.Is(err, zk.ErrClosing) && !isClosed(c.closing) {
		return fmt.Errorf("%w (session replaced: %v)", zk.ErrConnectionClosed, err)
	}
	return mapErr(err)
}

// mapErr turns go-zookeeper's "closing" (Close was called) into ErrClosed (counted as a
// request that may have been applied: the request was handed to the connection before
// Close, and "closing" does not say whether it went out), and a raw
// network error into a connection loss: go-zookeeper hands a request the socket's own
// error (e.g. "broken pipe") when writing it fails, and such a request may or may not
// have reached the server — exactly ErrConnectionClosed's meaning, which the retry policy
// retries.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, zk.ErrClosing) {
		return &closedInFlightError{cause: err}
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("%w (%v)", zk.ErrConnectionClosed, err)
	}
	return err
}
