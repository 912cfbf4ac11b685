package atomic

import (
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
	"github.com/zoocurator/zoocurator/internal/versioned"
)

var (
	// ErrUnknownOutcome is matched by the error of a change that may or may not have been
	// applied (connection lost, or context ended, while its write was in flight), and of
	// one whose write went to a node made again after the read (ErrNodeReplaced). It is
	// framework.ErrUnknownOutcome: errors.Is holds with either name, whichever package
	// the error came from.
	ErrUnknownOutcome = versioned.ErrUnknownOutcome
	// ErrNodeReplaced is matched (with ErrUnknownOutcome) by the error of a change whose
	// versioned write the server applied to another node than the one read: the counter
	// node was deleted and made again between the read and the write, and the new node
	// was at the version read (a new node starts at version 0). ZooKeeper cannot refuse
	// that write once it is sent: what the new node held (a reset to 0, say) was
	// overwritten, and the Result's Pre and Post are not a change the server made. The
	// caller reads the counter again and decides; see the package doc.
	ErrNodeReplaced = versioned.ErrNodeReplaced
	// ErrBadData is matched by a *BadDataError.
	ErrBadData = sentinel.New("atomic: node data has the wrong length", framework.ErrBadData)
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
