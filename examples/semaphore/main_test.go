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
	for _, want := range []string{
		"all 10 workers finished",
		"never more than 3 at once",
		"AcquireN(2) took 2 leases",
		"TryAcquireN(2) takes none: semaphore: no lease available",
		"TryAcquire takes the last one",
		"one more TryAcquire: semaphore: no lease available",
		"after ReturnAll, leases held: 0",
	} {
		assert.Contains(t, out.String(), want)
	}
}
