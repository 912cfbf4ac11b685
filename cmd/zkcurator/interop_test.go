package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestCuratorInterop runs zkcurator next to Curator (Java) on the same lock: the
// commands see a Curator holder, wait for it, and revoke it.
func TestCuratorInterop(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	tool := curatortest.Start(t, c, curatortest.WithSessionTimeout(4*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path = "/cli/interop"
	_, err := tool.Do(ctx, "mutex.new m %s", path)
	require.NoError(t, err)
	_, err = tool.Do(ctx, "mutex.revocable m release")
	require.NoError(t, err)
	got, err := tool.Do(ctx, "mutex.acquire m 5000")
	require.NoError(t, err)
	require.Equal(t, "true", got)
	node, err := tool.Do(ctx, "mutex.node m")
	require.NoError(t, err)

	h := zkc(t, c, "lock", "holders", path)
	assert.Equal(t, 0, h.code)
	assert.True(t, strings.HasPrefix(h.stdout.String(), "holder   "+node+"  "), "Curator's holder listed: %q", h.stdout.String())

	p := zkc(t, c, "lock", "run", path, "--timeout", "300ms", "--", "true")
	assert.Equal(t, 75, p.code, "a Curator holder excludes zkcurator")

	// A zkcurator run queues behind Curator; revoking Curator lets it in.
	log := filepath.Join(t.TempDir(), "log")
	waiter := start(t, c, "lock", "run", path, "--", "sh", "-c", "echo ran > "+log)
	require.Eventually(t, func() bool {
		parts, err := tool.Do(ctx, "mutex.participants m")
		return err == nil && len(strings.Fields(parts)) == 2
	}, 20*time.Second, 50*time.Millisecond, "zkcurator did not queue")
	assert.Equal(t, 0, zkc(t, c, "lock", "revoke", node, "--wait", "10s").code)
	_, err = tool.WaitEvent(ctx, "revoked m ok")
	require.NoError(t, err)
	assert.Equal(t, 0, waiter.wait(t, 20*time.Second))
	assert.Equal(t, "ran\n", read(t, log))
}
