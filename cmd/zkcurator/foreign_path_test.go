package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestRunRefusesAnotherRecipesPath checks that lock run, leader run and semaphore run
// refuse a path that holds another recipe's nodes (a leader latch's, a semaphore's, a
// lock's), whose holder their nodes would not exclude: exit 1 with a message that says
// what the path is, the command never run and nothing left behind.
func TestRunRefusesAnotherRecipesPath(t *testing.T) {
	srv := zktest.NewServer(t)
	zkConnect := srv.ConnectString()
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, zkConnect)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")

	latch, err := leader.NewLatch(c, "/cli/latch", "leading")
	require.NoError(t, err)
	require.NoError(t, latch.Start(ctx))
	t.Cleanup(func() { _ = latch.Close() })
	require.NoError(t, latch.Await(ctx))

	semStarted, lockStarted, stop := filepath.Join(dir, "sem"), filepath.Join(dir, "lock"), filepath.Join(dir, "stop")
	hold := func(started string) string {
		return fmt.Sprintf(`touch %s; while [ ! -f %s ]; do sleep 0.05; done`, started, stop)
	}
	sem := start(t, zkConnect, "semaphore", "run", "/cli/sem", "--leases", "1", "--", "sh", "-c", hold(semStarted))
	lock := start(t, zkConnect, "lock", "run", "/cli/lock", "--", "sh", "-c", hold(lockStarted))
	waitFile(t, semStarted, 20*time.Second)
	waitFile(t, lockStarted, 20*time.Second)

	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"lock", "run", "/cli/latch"}, "/cli/latch is a leader latch election"},
		{[]string{"leader", "run", "/cli/latch"}, "/cli/latch is a leader latch election"},
		{[]string{"semaphore", "run", "/cli/latch", "--leases", "1"}, "/cli/latch is a leader latch election"},
		{[]string{"lock", "run", "/cli/sem"}, "/cli/sem is a semaphore"},
		{[]string{"leader", "run", "/cli/sem"}, "/cli/sem is a semaphore"},
		{[]string{"semaphore", "run", "/cli/lock", "--leases", "1"}, "/cli/lock is a lock"},
	} {
		args := append(append([]string{}, tc.args...), "--timeout", "5s", "--", "touch", marker)
		before, err := zktest.Children(ctx, zkConnect, tc.args[2])
		require.NoError(t, err)
		p := zkc(t, zkConnect, args...)
		assert.Equal(t, 1, p.code, "%v", tc.args)
		assert.Contains(t, p.stderr.String(), tc.says, "%v", tc.args)
		_, err = os.Stat(marker)
		assert.ErrorIs(t, err, os.ErrNotExist, "%v ran its command beside the path's holder", tc.args)
		_ = os.Remove(marker)
		after, err := zktest.Children(ctx, zkConnect, tc.args[2])
		require.NoError(t, err)
		assert.Subset(t, before, after, "%v left nodes behind", tc.args) // an empty container may go meanwhile
	}

	require.NoError(t, os.WriteFile(stop, nil, 0o644))
	assert.Equal(t, 0, sem.wait(t, 20*time.Second))
	assert.Equal(t, 0, lock.wait(t, 20*time.Second))
}

// TestRunTakesPathWithPlainLocksChild checks that a path with a child named locks (here a
// mutex's path of its own) is no semaphore: lock run runs under it and lock holders lists
// its holders, while a real semaphore's path is still refused and named.
func TestRunTakesPathWithPlainLocksChild(t *testing.T) {
	srv := zktest.NewServer(t)
	zkConnect := srv.ConnectString()
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, zkConnect)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")

	inner, err := mutex.New(c, "/cli/app/locks")
	require.NoError(t, err)
	lease, err := inner.Acquire(ctx)
	require.NoError(t, err)
	defer func() { _ = lease.Release(ctx) }()

	p := zkc(t, zkConnect, "lock", "run", "/cli/app", "--timeout", "10s", "--", "touch", marker)
	assert.Equal(t, 0, p.code, "%s", p.stderr)
	assert.FileExists(t, marker)
	p = zkc(t, zkConnect, "lock", "holders", "/cli/app")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "/cli/app is not a lock: none of its 1 children is a lock node")
	assert.NotContains(t, p.stderr.String(), "semaphore")
	p = zkc(t, zkConnect, "semaphore", "holders", "/cli/app")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "/cli/app is not a semaphore")

	// Its lock node is a lock node, not a semaphore's, for get, stat and tree.
	p = zkc(t, zkConnect, "get", lease.Node())
	assert.Equal(t, 0, p.code)
	assert.Contains(t, p.stderr.String(), "a lock node (a mutex's or a leader selector's); 'zkcurator lock holders /cli/app/locks' reads it")
	assert.Contains(t, rawOut(t, zkConnect, "stat", lease.Node()), "recipe          lock node\n")
	assert.Regexp(t, `(?m)^    _c_[0-9a-f-]{36}-lock-0000000000  \(.*\)  lock node$`, rawOut(t, zkConnect, "tree", "/cli/app"))

	sem, err := semaphore.New(c, "/cli/sem", 1)
	require.NoError(t, err)
	semLease, err := sem.Acquire(ctx)
	require.NoError(t, err)
	defer func() { _ = semLease.Release(ctx) }()
	p = zkc(t, zkConnect, "lock", "holders", "/cli/sem")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "/cli/sem is a semaphore")
	p = zkc(t, zkConnect, "lock", "run", "/cli/sem", "--timeout", "5s", "--", "true")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "/cli/sem is a semaphore")
	p = zkc(t, zkConnect, "get", semLease.Node())
	assert.Contains(t, p.stderr.String(), "a semaphore lease; 'zkcurator semaphore holders /cli/sem' reads it")
}
