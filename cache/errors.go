package cache

import "errors"

var (
	// ErrClosed is returned by Start on a cache that was closed.
	ErrClosed = errors.New("cache: closed")
	// ErrAlreadyStarted is returned by Start on a cache that was started before.
	ErrAlreadyStarted = errors.New("cache: already started")
)
