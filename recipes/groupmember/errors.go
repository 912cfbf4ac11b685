package groupmember

import "errors"

var (
	// ErrClosed is returned by calls after Close.
	ErrClosed = errors.New("groupmember: closed")
	// ErrNotStarted is returned by calls that need Start first.
	ErrNotStarted = errors.New("groupmember: not started")
	// ErrAlreadyStarted is returned by a second Start.
	ErrAlreadyStarted = errors.New("groupmember: already started")
)
