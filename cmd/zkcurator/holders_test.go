package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestHoldersSayWhatThePathIs checks `lock holders` and `semaphore holders` on a path
// that does not exist, on a free lock, on each other's paths and on a leader latch's
// path: a missing or foreign path is said on stderr with exit status 1, never an empty
// listing with status 0.
func TestHoldersSayWhatThePathIs(t *testing.T) {
	srv := zktest.NewServer(t)
	zkConnect := srv.ConnectString()
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, zkConnect)

	// A path that does not exist.
	p := zkc(t, zkConnect, "lock", "holders", "/cli/missing")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "/cli/missing does not exist")
	assert.Empty(t, p.stdout.String())
	p = zkc(t, zkConnect, "semaphore", "holders", "/cli/missing")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "/cli/missing does not exist")

	// A free lock (its node exists, nobody holds it): nothing listed, status 0.
	_, err := c.Create(ctx, "/cli/free", nil, framework.WithParents())
	require.NoError(t, err)
	p = zkc(t, zkConnect, "lock", "holders", "/cli/free")
	assert.Equal(t, 0, p.code)
	assert.Empty(t, p.stdout.String())
	assert.Contains(t, p.stderr.String(), "nobody holds the lock at /cli/free")

	// A semaphore with one lease held and a second acquirer waiting.
	dir := t.TempDir()
	started, stop := filepath.Join(dir, "started"), filepath.Join(dir, "stop")
	holder := start(t, zkConnect, "semaphore", "run", "/cli/sem", "--leases", "1", "--",
		"sh", "-c", fmt.Sprintf(`touch %s; while [ ! -f %s ]; do sleep 0.05; done`, started, stop))
	waitFile(t, started, 20*time.Second)
	waiter := start(t, zkConnect, "semaphore", "run", "/cli/sem", "--leases", "1", "--", "true")
	// The waiter has made its lease node once there are two (server state, not time).
	require.Eventually(t, func() bool {
		kids, err := zktest.Children(context.Background(), zkConnect, "/cli/sem/leases")
		return err == nil && len(kids) == 2
	}, 20*time.Second, 20*time.Millisecond)

	p = zkc(t, zkConnect, "lock", "holders", "/cli/sem")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "/cli/sem is a semaphore")
	assert.Contains(t, p.stderr.String(), "zkcurator semaphore holders /cli/sem")
	assert.Empty(t, p.stdout.String())

	p = zkc(t, zkConnect, "semaphore", "holders", "/cli/sem", "--leases", "1")
	assert.Equal(t, 0, p.code)
	assert.Regexp(t, `^holder   /cli/sem/leases/_c_[0-9a-f-]{36}-lease-[0-9]{10}  [^ ]+:[0-9]+\n`+
		`waiting  /cli/sem/leases/_c_[0-9a-f-]{36}-lease-[0-9]{10}  [^ ]+:[0-9]+\n$`, p.stdout.String())
	p = zkc(t, zkConnect, "semaphore", "holders", "/cli/sem")
	assert.Equal(t, 0, p.code)
	assert.Regexp(t, `^(holder   /cli/sem/leases/_c_[0-9a-f-]{36}-lease-[0-9]{10}  [^ ]+:[0-9]+\n){2}$`, p.stdout.String(),
		"without --leases every lease node is listed as a holder")

	require.NoError(t, os.WriteFile(stop, nil, 0o644))
	assert.Equal(t, 0, holder.wait(t, 20*time.Second))
	assert.Equal(t, 0, waiter.wait(t, 20*time.Second))

	// semaphore holders on a lock's path.
	lockStarted, lockStop := filepath.Join(dir, "lock-started"), filepath.Join(dir, "lock-stop")
	lockHolder := start(t, zkConnect, "lock", "run", "/cli/lock", "--",
		"sh", "-c", fmt.Sprintf(`touch %s; while [ ! -f %s ]; do sleep 0.05; done`, lockStarted, lockStop))
	waitFile(t, lockStarted, 20*time.Second)
	p = zkc(t, zkConnect, "semaphore", "holders", "/cli/lock")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "/cli/lock is a lock, not a semaphore")
	require.NoError(t, os.WriteFile(lockStop, nil, 0o644))
	assert.Equal(t, 0, lockHolder.wait(t, 20*time.Second))

	// A leader latch's path.
	latch, err := leader.NewLatch(c, "/cli/election", "me")
	require.NoError(t, err)
	require.NoError(t, latch.Start(ctx))
	t.Cleanup(func() { _ = latch.Close() })
	require.NoError(t, latch.Await(ctx))
	p = zkc(t, zkConnect, "lock", "holders", "/cli/election")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "/cli/election is a leader latch election")
	p = zkc(t, zkConnect, "semaphore", "holders", "/cli/election")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "/cli/election is not a semaphore")
}
