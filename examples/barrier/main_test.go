package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 30*time.Second)
	want := "coordinator: barrier set\n" +
		"3 workers wait at the barrier\n" +
		"coordinator: input ready; workers started so far: 0\n" +
		"coordinator: barrier removed\n" +
		"worker 0: released, starts its work\n" +
		"worker 1: released, starts its work\n" +
		"worker 2: released, starts its work\n"
	assert.Equal(t, want, out)
}
