package curatortest

import "errors"

var (
	// ErrUnavailable is wrapped by the error Available returns when Java, javac or
	// Curator's jars are missing.
	ErrUnavailable = errors.New("curatortest: Java or Curator not available")
	// ErrExited is returned by a Tool whose JVM has exited (after Close or Kill, or a crash).
	ErrExited = errors.New("curatortest: Curator tool has exited")
	// ErrBenchFailed marks a failure of a Bench (StartBench): a bad configuration or
	// workload, a recipe that failed in the JVM, a JVM that exited. The error's text
	// carries the JVM's message and the end of its stderr.
	ErrBenchFailed = errors.New("curatortest: curator bench failed")
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
