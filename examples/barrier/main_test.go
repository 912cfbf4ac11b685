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
	want := "coordinator: barrier set\n" +
		"3 workers wait at the barrier\n" +
		"coordinator: input ready; workers started so far: 0\n" +
		"coordinator: barrier removed\n" +
		"worker 0: released, starts its work\n" +
		"worker 1: released, starts its work\n" +
		"worker 2: released, starts its work\n"
	assert.Equal(t, want, out.String())
}
