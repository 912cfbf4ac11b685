package sharedcount

import (
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
	"github.com/zoocurator/zoocurator/internal/versioned"
)

var (
	// ErrConflict is returned by TrySet when the node changed since the version passed
	// was read, and by Set when the node was deleted: nothing was written.
	ErrConflict = fmt.Errorf("sharedcount: %w", versioned.ErrConflict)
	// ErrUnknownOutcome is matched by the error of a write that may or may not have been
	// applied (connection lost or context ended while it was in flight), and of a TrySet
	// that was applied to a node made again after the read (ErrNodeReplaced). It is
	// framework.ErrUnknownOutcome: errors.Is holds with either name.
	ErrUnknownOutcome = versioned.ErrUnknownOutcome
	// ErrNodeReplaced is matched (with ErrUnknownOutcome) by the error of a TrySet whose
	// write the server applied to another node than the one read: the node was deleted
	// and made again in between, at the version read. What the new node held was
	// overwritten; see TrySet.
	ErrNodeReplaced = versioned.ErrNodeReplaced
	// ErrNotStarted is returned by calls that need Start first.
	ErrNotStarted = sentinel.New("sharedcount: not started", framework.ErrNotStarted)
	// ErrAlreadyStarted is matched (with framework.ErrInvalidArgument) by the error of a
	// Start on a value already started, or started meanwhile by another Start.
	ErrAlreadyStarted = sentinel.New("sharedcount: already started", framework.ErrAlreadyStarted)
	// ErrClosed is returned by calls after Close.
	ErrClosed = sentinel.New("sharedcount: closed", framework.ErrClosed)
	// ErrBadData is matched by a *BadDataError.
	ErrBadData = sentinel.New("sharedcount: node does not hold a 4-byte integer", framework.ErrBadData)
)

// BadDataError reports a count node whose data is not a 4-byte integer (written by
// someone else). It names the bytes found.
type BadDataError struct {
	Path string
	Data []byte
}

// Error names the node and the bytes found.
func (e *BadDataError) Error() string {
	return fmt.Sprintf("sharedcount: %s holds %d bytes (% x), not a 4-byte big-endian integer", e.Path, len(e.Data), e.Data)
}

// Unwrap returns ErrBadData.
func (e *BadDataError) Unwrap() error { return ErrBadData }
