//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// processGroup returns the process group of process pid (from /proc).
func processGroup(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	// pid (comm) state ppid pgrp ...: the fields after the last ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	require.GreaterOrEqual(t, len(f), 3)
	pgrp, err := strconv.Atoi(f[2])
	require.NoError(t, err)
	return pgrp
}

// TestKilledZkcuratorTakesCommandGroup kills zkcurator with SIGKILL while its command, a
// shell, waits for its own child: every process of the command's process group must
// stop with it (the lock passes on when the session ends: nothing of the command may
// still run then), not only the shell, which would leave its child running and its next
// step never run or run unlocked.
func TestKilledZkcuratorTakesCommandGroup(t *testing.T) {
	srv := zktest.NewServer(t)
	dir := t.TempDir()
	pidFile, marker := filepath.Join(dir, "pid"), filepath.Join(dir, "marker")
	// The shell's output goes elsewhere: a process left holding zkcurator's output pipe
	// would keep the test's wait for zkcurator from ending.
	p := start(t, srv.ConnectString(), "lock", "run", "/cli/killed", "--",
		"sh", "-c", fmt.Sprintf(`exec >/dev/null 2>&1; echo $$ > %s.tmp && mv %s.tmp %s; sleep 1000; touch %s`, pidFile, pidFile, pidFile, marker))
	waitFile(t, pidFile, 30*time.Second)
	pid, err := strconv.Atoi(strings.TrimSpace(read(t, pidFile)))
	require.NoError(t, err)
	pgrp := processGroup(t, pid)
	require.NotEqual(t, syscall.Getpgrp(), pgrp, "the command runs in a process group of its own")
	t.Cleanup(func() { _ = syscall.Kill(-pgrp, syscall.SIGKILL) })
	// The shell's sleep is in the group too once there are two processes in it (the
	// shell has forked it).
	require.Eventually(t, func() bool {
		n := 0
		procs, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, s := range procs {
			b, err := os.ReadFile(s)
			if err != nil {
				continue
			}
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			if len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(pgrp) {
				if c, err := os.ReadFile(filepath.Join(filepath.Dir(s), "comm")); err == nil && strings.TrimSpace(string(c)) == "sleep" {
					n++
				}
			}
		}
		return n == 1
	}, 30*time.Second, 20*time.Millisecond, "the command's sleep did not start")

	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(-pgrp, 0) == nil {
		require.True(t, time.Now().Before(deadline), "30 s after zkcurator was killed, its command's process group still runs")
		time.Sleep(20 * time.Millisecond)
	}
	_, err = os.Stat(marker)
	assert.ErrorIs(t, err, os.ErrNotExist, "the command's next step ran")
}
