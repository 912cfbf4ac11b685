package retry

import "errors"

var (
	// ErrInvalidArgument is returned, wrapped with the offending value, by the
	// constructors of this package when given an argument they cannot use,
	// such as a base sleep that is not positive. It matches
	// framework.ErrInvalidArgument too (see argError), like every invalid-argument
	// error of the library.
	ErrInvalidArgument error = &argError{msg: "retry: invalid argument"}

	// ErrOperationTimeout is for callers that impose their own per-request
	// timeouts: an operation that fails with an error matching it (through
	// errors.Is) is retried by [Do] like a lost connection.
	ErrOperationTimeout = errors.New("retry: operation timed out")

	// ErrRetriesExhausted is matched (through errors.Is) by the error that
	// [Do] returns when the policy allows no further retry. The same error
	// also matches the operation's last error.
	ErrRetriesExhausted = errors.New("retry: gave up")

	// ErrNilOperation is returned by [Do] when it is given a nil operation. It
	// matches ErrInvalidArgument (and framework.ErrInvalidArgument).
	ErrNilOperation error = &argError{msg: "retry: nil operation", nested: true}
)

// argError is an invalid-argument sentinel of this package. Package framework, which
// holds the library's family root for bad arguments (framework.ErrInvalidArgument), sits
// above this one and cannot be imported here: the root is recognised by the marker
// method its type has.
type argError struct {
	msg    string
	nested bool // a kind of ErrInvalidArgument
}

func (e *argError) Error() string { return e.msg }

// Is reports whether target is ErrInvalidArgument (for a nested kind) or the library's
// invalid-argument root (framework.ErrInvalidArgument).
func (e *argError) Is(target error) bool {
	if e.nested && target == ErrInvalidArgument {
		return true
	}
	_, root := target.(interface{ InvalidArgumentFamily() })
	return root
}
