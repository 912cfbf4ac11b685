package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 30*time.Second)
	want := "== two resources at once ==\n" +
		"A: holds alice and bob: transfers 10 from alice to bob\n" +
		"B: cannot lock alice or bob alone meanwhile\n" +
		"A: released both (in reverse order)\n" +
		"== all or none ==\n" +
		"B: holds bob\n" +
		"A: gives up after its 500ms deadline: context deadline exceeded\n" +
		"B: alice is free: A did not keep the half it had taken\n" +
		"A: once B released bob, A holds both and transfers\n"
	assert.Equal(t, want, out)
}
