package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

// TestMain runs a producer or consumer role when the example starts this test binary as
// one of its processes.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	os.Exit(m.Run())
}

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 90*time.Second)
	for _, want := range []string{
		"2 producer processes queued 20 jobs",
		"consumer A killed (SIGKILL) while working on job-",
		"the killed consumer's job",
		"all 20 jobs done, each exactly once",
		"jobs left in the queue: 0",
	} {
		assert.Contains(t, out, want)
	}
}
