package framework

import (
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
	return func(o *options) error {
		if observe == nil {
			return fmt.Errorf("%w: nil request observer", ErrInvalidArgument)
		}
		o.requestObservers = append(o.requestObservers, observe)
		return nil
	}
}

// WithStateListener registers fn as a connection state listener (see AddListener) when
// the client is created, so that it hears every state change from the first Connected
// on, which a listener added after Connect returned cannot. The default is none.
func WithStateListener(fn func(State)) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("%w: nil state listener", ErrInvalidArgument)
		}
		o.stateListeners = append(o.stateListeners, fn)
		return nil
	}
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
