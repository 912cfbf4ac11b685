package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 30*time.Second)
	for _, want := range []string{
		"all 10 workers finished",
		"never more than 3 at once",
		"AcquireN(2) took 2 leases",
		"TryAcquireN(2) takes none: semaphore: no lease available",
		"TryAcquire takes the last one",
		"one more TryAcquire: semaphore: no lease available",
		"after ReturnAll, leases held: 0",
	} {
		assert.Contains(t, out, want)
	}
}
