package wire

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Errors of the connection itself. Each wraps the go-zookeeper value a caller of
// go-zookeeper's Conn would have seen in the same case, so that errors.Is with zk's
// vocabulary keeps working.
var (
	// ErrClosed is returned by requests on a Conn that Close or CloseSession ended, and by
	// requests that were waiting for their reply when it did. It wraps zk.ErrClosing.
	ErrClosed error = &wrapped{"wire: connection closed by the client", zk.ErrClosing}

	// ErrConnectionLost is wrapped by the error of every request whose reply will not
	// come because the connection failed (a read or write error, the read timeout, a
	// reply out of order), and by requests made afterwards. Whether a write it carried
	// was applied is unknown. It wraps zk.ErrConnectionClosed.
	ErrConnectionLost error = &wrapped{"wire: connection lost", zk.ErrConnectionClosed}

	// ErrSessionExpired is returned by Dial when the server says the session it was
	// asked to resume has expired (or never existed). It wraps zk.ErrSessionExpired.
	ErrSessionExpired error = &wrapped{"wire: session expired", zk.ErrSessionExpired}

	// ErrFrameTooLarge is returned for a request whose encoding exceeds the largest frame
	// (Config.MaxFrame); nothing was sent.
	ErrFrameTooLarge = errors.New("wire: request larger than the largest frame")

	// ErrMalformed is wrapped by every error about bytes from the server that do not
	// decode as expected: a truncated frame, a negative or oversized length, an unknown
	// type, a reply out of order.
	ErrMalformed = errors.New("wire: malformed record")

	// ErrRolledBack is the error of the operations of a failed Multi that did not fail
	// themselves: none of a failed Multi's operations is applied.
	ErrRolledBack = errors.New("wire: not applied: another operation of the multi failed")

	// ErrReadOnlyServer is returned by Dial when the server is in read-only mode and the
	// Config did not accept one (CanBeReadOnly).
	ErrReadOnlyServer = errors.New("wire: server is read-only")
)

// wrapped is a sentinel with its own message that wraps a go-zookeeper value.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// Error is an error code the server answered a request with. Unwrap returns the
// go-zookeeper value of the code (zk.ErrNoNode for -101, ...), or nil for a code
// go-zookeeper has no value for, so errors.Is(err, zk.ErrNoNode) holds for a NoNode reply.
type Error struct {
	// Code is ZooKeeper's KeeperException code, negative.
	Code int32
	// Zxid is the zxid of the reply that carried the error.
	Zxid int64
}

// Error describes the code.
func (e *Error) Error() string {
	if err := codeErrors[e.Code]; err != nil {
		return "wire: " + err.Error()
	}
	if name := codeNames[e.Code]; name != "" {
		return fmt.Sprintf("wire: server error %d (%s)", e.Code, name)
	}
	return fmt.Sprintf("wire: server error %d", e.Code)
}

// Unwrap returns go-zookeeper's value for the code, if it has one.
func (e *Error) Unwrap() error { return codeErrors[e.Code] }

// Codes that go-zookeeper's errors do not cover, named after KeeperException.Code.
const (
	CodeSystemError          int32 = -1
	CodeRuntimeInconsistency int32 = -2
	CodeConnectionLoss       int32 = -4
	CodeMarshallingError     int32 = -5
	CodeUnimplemented        int32 = -6
	CodeOperationTimeout     int32 = -7
	CodeNotReadOnly          int32 = -119
	CodeNoWatcher            int32 = -121
	CodeRequestTimeout       int32 = -122
	CodeQuotaExceeded        int32 = -125
	CodeThrottled            int32 = -127
)

// codeErrors maps KeeperException codes to go-zookeeper's values.
var codeErrors = map[int32]error{
	-8:   zk.ErrBadArguments,
	-100: zk.ErrAPIError,
	-101: zk.ErrNoNode,
	-102: zk.ErrNoAuth,
	-103: zk.ErrBadVersion,
	-108: zk.ErrNoChildrenForEphemerals,
	-110: zk.ErrNodeExists,
	-111: zk.ErrNotEmpty,
	-112: zk.ErrSessionExpired,
	-114: zk.ErrInvalidACL,
	-115: zk.ErrAuthFailed,
	-116: zk.ErrClosing,
	-117: zk.ErrNothing,
	-118: zk.ErrSessionMoved,
	-123: zk.ErrReconfigDisabled,
}

// codeNames names the codes without a go-zookeeper value.
var codeNames = map[int32]string{
	-1:   "system error",
	-2:   "runtime inconsistency",
	-3:   "data inconsistency",
	-4:   "connection loss",
	-5:   "marshalling error",
	-6:   "unimplemented",
	-7:   "operation timeout",
	-9:   "invalid state",
	-12:  "unknown session",
	-13:  "new config no quorum",
	-14:  "reconfig in progress",
	-113: "invalid callback",
	-119: "not read-only",
	-120: "ephemeral on local session",
	-121: "no watcher",
	-122: "request timeout",
	-124: "session closed requires SASL auth",
	-125: "quota exceeded",
	-127: "throttled",
}

// codeError is the error for a code: nil for 0.
func codeError(code int32, zxid int64) error {
	if code == 0 {
		return nil
	}
	return &Error{Code: code, Zxid: zxid}
}
