package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestRun(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, srv.ConnectString(), &out))
	t.Log("\n" + out.String())
	want := "A: holds the lock (revocable)\n" +
		"B: the lock is busy\n" +
		"B: asks the holder (the first participant) to let go\n" +
		"A: asked to let go: finishing the current step, then releasing\n" +
		"B: holds the lock\n" +
		"A: its lease is over (Done is closed)\n"
	assert.Equal(t, want, out.String())
}
