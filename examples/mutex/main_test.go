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
		"took 90 order numbers",
		"no duplicate order numbers",
		"the counter node holds 90",
		"acquiring with lease.Context is refused: ErrAlreadyHeld",
		"lease.Reenter holds the same node: true",
		"lock nodes in ZooKeeper: 1",
		"after one Release the lock is still held: true",
		"after the second Release it is free: true",
		"TryAcquire returns at once: mutex: locked by another holder",
		"gives up: context deadline exceeded",
		"client 2 left no node behind: 1 lock node",
		"client 2: TryAcquire gets the lock",
		"lease.Done closed",
		"client 2 gets the lock once the server expires client 4's session",
		"its Release reports the lease lost",
	} {
		assert.Contains(t, out, want)
	}
}
