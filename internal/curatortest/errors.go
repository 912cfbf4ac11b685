package curatortest

import "errors"

var (
	// ErrUnavailable is wrapped by the error Available returns when Java, javac or
	// Curator's jars are missing.
	ErrUnavailable = errors.New("curatortest: Java or Curator not available")
	// ErrExited is returned by a Tool whose JVM has exited (after Close or Kill, or a crash).
	ErrExited = errors.New("curatortest: Curator tool has exited")
)

// CommandError is the error Do returns when the tool answers "err <message>".
type CommandError struct {
	Command string // the command line sent
	Message string // the text after "err "
}

// Error gives the command and what Curator said about it.
func (e *CommandError) Error() string {
	return "curatortest: " + e.Command + ": " + e.Message
}
