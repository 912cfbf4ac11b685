package persistentnode

import (
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrClosed is returned by calls after Close.
	ErrClosed = sentinel.New("persistentnode: closed", framework.ErrClosed)
	// ErrNotStarted is returned by WaitForInitialCreate before Start.
	ErrNotStarted = sentinel.New("persistentnode: not started", framework.ErrNotStarted)
	// ErrAlreadyStarted is returned by a second Start.
	ErrAlreadyStarted = sentinel.New("persistentnode: already started", framework.ErrAlreadyStarted)
)
