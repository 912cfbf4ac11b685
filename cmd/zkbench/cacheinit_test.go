package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestCacheInit: cache-init builds its tree, starts one cache on it (ours, then Curator's
// in a JVM), reports docs/benchmark.md's fields and its own with every node cached, and leaves
// nothing behind; each cache hears the updates of every node (250 < 1000) after.
func TestCacheInit(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	for _, impl := range []string{implOurs, implCurator} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"--connect", srv.ConnectString(), "--workload", "cache-init",
			"--impl", impl, "--nodes", "250"}, &stdout, &stderr)
		require.NoError(t, err, stderr.String())
		var line map[string]any
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &line), stdout.String())
		for field, typ := range required {
			assert.Equal(t, typ, kind(line[field]), "%s: field %s", impl, field)
		}
		assert.Equal(t, impl, line["impl"])
		assert.Equal(t, "cache-init", line["workload"])
		assert.EqualValues(t, 250, line["nodes"])
		assert.EqualValues(t, 250, line["nodes_cached"], "%s: every node cached", impl)
		assert.EqualValues(t, 250, line["ops"])
		assert.Greater(t, line["server_watches"], 0.0)
		assert.Greater(t, line["requests_per_node"], 0.0)
		assert.Contains(t, line, "heap_bytes_per_node")
		assert.Greater(t, line["updates_heard_seconds"], 0.0, "%s: the updates were heard", impl)
		if impl == implOurs {
			assert.EqualValues(t, 500, line["server_watches"], "a data and a child watch per node")
			assert.EqualValues(t, 2, line["zk_requests_per_node"], "a getData and a getChildren per node")
		} else {
			assert.Contains(t, line["note"], "65535")
		}
	}
	left, err := zktest.Children(context.Background(), srv.ConnectString(), "/zkbench")
	require.NoError(t, err)
	assert.Empty(t, left, "the runs' base paths are deleted")
}
