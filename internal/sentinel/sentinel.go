// Package sentinel makes the recipes' sentinel errors: each speaks in its package's own
// words ("leader: closed") and matches, with errors.Is, the framework sentinel of its
// meaning (framework.ErrClosed), so that a caller writes one errors.Is per meaning,
// whatever package the error came from. framework's package doc ("Errors") lists the
// families; family_test.go checks every exported sentinel of the module against them.
package sentinel

// New returns an error whose message is msg and that matches each of families with
// errors.Is.
func New(msg string, families ...error) error {
	return &sentinelError{msg: msg, families: families}
}

type sentinelError struct {
	msg      string
	families []error
}

func (e *sentinelError) Error() string   { return e.msg }
func (e *sentinelError) Unwrap() []error { return e.families }
