package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 60*time.Second)
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
		assert.Contains(t, out, want)
	}
}
