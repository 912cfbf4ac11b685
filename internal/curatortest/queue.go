package curatortest

import (
	_ "embed"
	"testing"
)

//go:embed java/QueueDriver.java
var queueSource []byte

// queueProgram is what StartQueueDriver runs.
var queueProgram = &javaProgram{mainClass: "QueueDriver", source: queueSource}

// StartQueueDriver is Start for QueueDriver, the Java program that drives Curator's queue
// recipes (its commands are listed in java/QueueDriver.java). It answers the same
// protocol, so the returned Tool's methods work as for Start's.
func StartQueueDriver(t testing.TB, connect string, opts ...Option) *Tool {
	t.Helper()
	return Start(t, connect, append(opts, func(o *options) { o.program = queueProgram })...)
}
