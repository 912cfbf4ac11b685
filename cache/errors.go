package cache

import (
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrClosed is returned by Start on a cache that was closed.
	ErrClosed = sentinel.New("cache: closed", framework.ErrClosed)
	// ErrAlreadyStarted is returned by Start on a cache that was started before.
	ErrAlreadyStarted = sentinel.New("cache: already started", framework.ErrAlreadyStarted)
)
