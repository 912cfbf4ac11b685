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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, srv.ConnectString(), &out))
	t.Log("\n" + out.String())
	for _, want := range []string{
		"the service's config at start:\n  retries = 3\n  timeout = 5s\n",
		"service heard: NODE_UPDATED timeout = 10s (was 5s)",
		"service heard: NODE_ADDED max-batch = 100",
		"service heard: NODE_ADDED payment = v1\n  service heard: NODE_ADDED payment/provider = acme",
		"service heard: NODE_REMOVED retries",
		"service heard: CONNECTION_SUSPENDED",
		"reads timeout = 10s from its cache (stale)",
		"service heard: CONNECTION_RECONNECTED",
		"service heard: NODE_UPDATED timeout = 30s (was 10s)  (made while it was cut off)",
		"the service's final config:\n  max-batch = 100\n  payment = v1\n  payment/provider = acme\n  timeout = 30s\n",
		"the service's cache matches what the operator wrote",
	} {
		assert.Contains(t, out.String(), want)
	}
}
