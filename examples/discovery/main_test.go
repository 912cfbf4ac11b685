package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 90*time.Second)
	for _, want := range []string{
		"greeter-1 registered (zone eu-west)",
		"greeter-2 registered (zone eu-north)",
		"client found greeter-1 at http://127.0.0.1:",
		"client found greeter-2 at http://127.0.0.1:",
		"== the client calls the service, round robin ==\n" +
			"  request answered: \"hello from greeter-1\"\n  request answered: \"hello from greeter-2\"\n" +
			"  request answered: \"hello from greeter-1\"\n  request answered: \"hello from greeter-2\"\n",
		"greeter-2's session expired: its node is gone, and the client's cache lists greeter-1 only\n" +
			"  request answered: \"hello from greeter-1\"\n",
	} {
		assert.Contains(t, out, want)
	}
	// After the crash every request is answered by greeter-1; greeter-2 fails at most
	// twice before the down-instance policy leaves it out (fewer if its session expired
	// first).
	after := out[strings.Index(out, "== greeter-2 crashes =="):]
	assert.Equal(t, 5, strings.Count(after, "request answered: \"hello from greeter-1\""))
	assert.NotContains(t, after, "hello from greeter-2")
	assert.LessOrEqual(t, strings.Count(after, "greeter-2 failed"), 2)
}
