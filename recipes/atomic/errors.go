package atomic

import (
	"errors"
	"fmt"

	"github.com/zoocurator/zoocurator/internal/versioned"
)

var (
	// ErrUnknownOutcome is matched by the error of a change that may or may not have been
	// applied (connection lost, or context ended, while its write was in flight).
	ErrUnknownOutcome = versioned.ErrUnknownOutcome
	// ErrBadData is matched by a *BadDataError.
	ErrBadData = errors.New("atomic: node data has the wrong length")
)

// BadDataError reports a counter node whose data (written by someone else) is not the
// counter's size. It names the bytes found.
type BadDataError struct {
	Path string
	Data []byte
	Want int // the size expected: 8 for a Long, 4 for an Int
}

// Error names the node, the bytes found and the size expected.
func (e *BadDataError) Error() string {
	return fmt.Sprintf("atomic: %s holds %d bytes (% x), not a %d-byte big-endian integer", e.Path, len(e.Data), e.Data, e.Want)
}

// Unwrap returns ErrBadData.
func (e *BadDataError) Unwrap() error { return ErrBadData }
