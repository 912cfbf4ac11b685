package persistentnode

import "errors"

var (
	// ErrClosed is returned by calls after Close.
	ErrClosed = errors.New("persistentnode: closed")
	// ErrNotStarted is returned by WaitForInitialCreate before Start.
	ErrNotStarted = errors.New("persistentnode: not started")
	// ErrAlreadyStarted is returned by a second Start.
	ErrAlreadyStarted = errors.New("persistentnode: already started")
)
