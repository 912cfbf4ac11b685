package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 30*time.Second)
	want := "A: holds the lock (revocable)\n" +
		"B: the lock is busy\n" +
		"B: asks the holder (the first participant) to let go\n" +
		"A: asked to let go: finishing the current step, then releasing\n" +
		"B: holds the lock\n" +
		"A: its lease is over (Done is closed)\n"
	assert.Equal(t, want, out)
}
