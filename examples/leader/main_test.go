package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 60*time.Second)
	for _, want := range []string{
		"in line: instance-A (leader), instance-B, instance-C",
		"instance A is leader\n",
		"run  1: instance A sends the hourly report",
		"run  5: instance A sends the hourly report\ninstance A is shut down for a deploy: it closes its latch\n" +
			"instance B is leader: it took over at once\nin line: instance-B (leader), instance-C\n" +
			"  run  6: instance B sends the hourly report",
		"run 10: instance B sends the hourly report\ninstance B is shut down for a deploy: it closes its latch\n" +
			"instance C is leader: it took over at once\nin line: instance-C (leader)\n" +
			"  run 11: instance C sends the hourly report",
		"run 15: instance C sends the hourly report\ninstance C is shut down for a deploy",
		"runs per instance: A 5, B 5, C 5 (15 in all)",
		"job never ran on two instances at once, and never two leaders at once",
		"each new leader's fencing token was higher than the last",
		"a late write with instance A's token: refused: a newer leader has written (stale fencing token)",
		"the store holds 15 reports",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "lost leadership")
}
