package groupmember

import (
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrClosed is returned by calls after Close.
	ErrClosed = sentinel.New("groupmember: closed", framework.ErrClosed)
	// ErrNotStarted is returned by calls that need Start first.
	ErrNotStarted = sentinel.New("groupmember: not started", framework.ErrNotStarted)
	// ErrAlreadyStarted is returned by a second Start.
	ErrAlreadyStarted = sentinel.New("groupmember: already started", framework.ErrAlreadyStarted)
)
