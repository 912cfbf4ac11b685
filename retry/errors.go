package retry

import "errors"

var (
	// ErrInvalidArgument is returned, wrapped with the offending value, by the
	// constructors of this package when given an argument they cannot use,
	// such as a base sleep that is not positive.
	ErrInvalidArgument = errors.New("retry: invalid argument")

	// ErrOperationTimeout is for callers that impose their own per-request
	// timeouts: an operation that fails with an error matching it (through
	// errors.Is) is retried by [Do] like a lost connection.
	ErrOperationTimeout = errors.New("retry: operation timed out")

	// ErrRetriesExhausted is matched (through errors.Is) by the error that
	// [Do] returns when the policy allows no further retry. The same error
	// also matches the operation's last error.
	ErrRetriesExhausted = errors.New("retry: gave up")

	// ErrNilOperation is returned by [Do] when it is given a nil operation.
	ErrNilOperation = errors.New("retry: nil operation")
)
