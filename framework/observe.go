package framework

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RequestInfo describes one request the client sent to ZooKeeper, for a request
// observer (WithRequestObserver).
type RequestInfo struct {
	// Op is the request's name: "create", "delete", "getData", "setData", "exists",
	// "getChildren", "sync", "getACL", "setACL" or "multi".
	Op string
	// Path is the node's path as the caller sees it (without chroot or namespace);
	// empty for requests without one (multi).
	Path string
	// Duration is how long the request took, until its answer or until the caller
	// stopped waiting for it (context ended, client closed).
	Duration time.Duration
	// Err is the request's error, nil on success. A "no node" or "node exists" answer
	// is an error here even where the operation treats it as a normal outcome.
	Err error
}

// WithRequestObserver calls observe after every request the client sends to ZooKeeper,
// retries included, with the request's name, path, duration and error. It runs on the
// caller's goroutine once the request is answered or abandoned: it must be fast and must
// not block. The default is none. It comes in addition to WithRequestHook.
func WithRequestObserver(observe func(RequestInfo)) Option {
	return check(func(o *options) error {
		if observe == nil {
			return fmt.Errorf("framework: %w: nil request observer", ErrInvalidArgument)
		}
		o.requestObservers = append(o.requestObservers, observe)
		return nil
	})
}

// WithStateListener registers fn as a connection state listener (see AddListener) when
// the client is created, so that it hears every state change from the first Connected
// on, which a listener added after Connect returned cannot. The default is none.
func WithStateListener(fn func(State)) Option {
	return check(func(o *options) error {
		if fn == nil {
			return fmt.Errorf("framework: %w: nil state listener", ErrInvalidArgument)
		}
		o.stateListeners = append(o.stateListeners, fn)
		return nil
	})
}

// observeRequest passes a finished request to the request observers.
func (c *Client) observeRequest(op, fullPath string, start time.Time, err error) {
	info := RequestInfo{Op: op, Duration: time.Since(start), Err: err}
	if fullPath != "" {
		info.Path = c.relPath(fullPath)
	}
	for _, obs := range c.opts.requestObservers {
		obs(info)
	}
}

// LockEvent is what a lock observer is told about (WithLockObserver).
type LockEvent int

// The lock events.
const (
	// LockAcquired: a lock or lease was acquired; Duration is how long it took.
	LockAcquired LockEvent = iota + 1
	// LockFailed: an acquisition failed, timed out or found the lock busy (TryAcquire);
	// Duration is how long it tried, Err why it failed.
	LockFailed
	// LockReleased: a lock or lease was released for the last time (re-entrant holds
	// count as one); Duration is how long it was held.
	LockReleased
)

// String returns "acquired", "failed" or "released".
func (e LockEvent) String() string {
	switch e {
	case LockAcquired:
		return "acquired"
	case LockFailed:
		return "failed"
	case LockReleased:
		return "released"
	}
	return fmt.Sprintf("LockEvent(%d)", int(e))
}

// LockInfo describes an acquisition or a release for a lock observer.
type LockInfo struct {
	Event LockEvent
	// Recipe is "mutex", "rwlock-read", "rwlock-write" or "semaphore".
	Recipe string
	// Path is the lock's or semaphore's path (without namespace).
	Path string
	// Duration is the wait (LockAcquired, LockFailed) or the hold (LockReleased).
	Duration time.Duration
	// Err is why an acquisition failed (LockFailed only).
	Err error
}

// WithLockObserver calls observe when a lock recipe built on the client (mutex, rwlock,
// semaphore, and what is built on them) acquires, fails to acquire or releases a lock or
// lease, with how long it waited or held. It runs on the goroutine that acquired or
// released: it must be fast and must not block. The default is none.
func WithLockObserver(observe func(LockInfo)) Option {
	return check(func(o *options) error {
		if observe == nil {
			return fmt.Errorf("framework: %w: nil lock observer", ErrInvalidArgument)
		}
		o.lockObservers = append(o.lockObservers, observe)
		return nil
	})
}

// ObservesLocks reports whether the client has a lock observer, so that recipes measure
// only when someone listens.
func (c *Client) ObservesLocks() bool { return len(c.opts.lockObservers) > 0 }

// ObserveLock passes info to the client's lock observers. It is for lock recipes.
func (c *Client) ObserveLock(info LockInfo) {
	for _, obs := range c.opts.lockObservers {
		obs(info)
	}
}

// errorCodes names ZooKeeper's errors by their code, as the server's KeeperException.Code
// spells them.
var errorCodes = []struct {
	err  error
	code string
}{
	{ErrNoNode, "NONODE"},
	{ErrNodeExists, "NODEEXISTS"},
	{ErrBadVersion, "BADVERSION"},
	{ErrNotEmpty, "NOTEMPTY"},
	{ErrNoAuth, "NOAUTH"},
	{ErrAuthFailed, "AUTHFAILED"},
	{ErrInvalidACL, "INVALIDACL"},
	{ErrSessionExpired, "SESSIONEXPIRED"},
	{ErrSessionMoved, "SESSIONMOVED"},
	{ErrNoChildrenForEph, "NOCHILDRENFOREPHEMERALS"},
	{ErrInvalidFlags, "INVALIDFLAGS"},
	{ErrNotConnected, "CONNECTIONLOSS"},
	{ErrConnectionClosed, "CONNECTIONLOSS"},
	{ErrNoServer, "NOSERVER"},
	{ErrClosed, "CLOSED"},
	{ErrDataTooLarge, "DATATOOLARGE"},
	{ErrInvalidArgument, "BADARGUMENTS"},
	{context.Canceled, "CANCELED"},
	{context.DeadlineExceeded, "DEADLINEEXCEEDED"},
}

// ErrorCode returns a short, stable name for err, for metrics and logs: ZooKeeper's code
// name ("NONODE", "CONNECTIONLOSS", "SESSIONEXPIRED", …), "CLOSED" for a closed client,
// "CANCELED" or "DEADLINEEXCEEDED" for an ended context, "OK" for nil and "OTHER" for the
// rest.
func ErrorCode(err error) string {
	if err == nil {
		return "OK"
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return "OTHER"
}
