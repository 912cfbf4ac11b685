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
	want := "== two resources at once ==\n" +
		"A: holds alice and bob: transfers 10 from alice to bob\n" +
		"B: cannot lock alice or bob alone meanwhile\n" +
		"A: released both (in reverse order)\n" +
		"== all or none ==\n" +
		"B: holds bob\n" +
		"A: gives up after its 500ms deadline: context deadline exceeded\n" +
		"B: alice is free: A did not keep the half it had taken\n" +
		"A: once B released bob, A holds both and transfers\n"
	assert.Equal(t, want, out.String())
}
