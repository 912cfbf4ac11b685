package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 30*time.Second)
	want := "3 workers entered, did their part and left\n" +
		"no worker started before the last one (worker 2, late) arrived\n" +
		"no worker left before the slowest one (worker 0) finished\n"
	assert.Equal(t, want, out)
}
