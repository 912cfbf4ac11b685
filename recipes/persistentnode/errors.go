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

	// errWrittenElsewhere is matched by the error of a write of a sequential node that went
	// into another node, made at its name between the read of the node and the write, at
	// the version read: the data were written, not into the Node's node. It matches
	// framework.ErrUnknownOutcome, as any write that hit a node made again does.
	errWrittenElsewhere = sentinel.New("persistentnode: written into another node made at the name since it was read", framework.ErrUnknownOutcome)
)
