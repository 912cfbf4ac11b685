package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// startMember starts doublebarrier run at path (two members) whose command is the
// signal logger logging to log, and waits until the command has started: both members
// are in.
func startMember(t *testing.T, connect, path, log string, flags ...string) *proc {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	args := append([]string{"doublebarrier", "run", path, "--members", "2"}, flags...)
	return startEnv(t, connect, []string{"ZKCURATOR_TEST_SIGNAL_LOG=" + log}, append(args, "--", self)...)
}

// TestDoubleBarrierRunInterruptedLeave interrupts a member whose command then ends while
// the other member is still in: its Leave, which waits for the other, is bounded by
// --grace (default 10s) and exits 130; a further signal ends it at once. The member still
// in leaves by itself once the interrupted one is gone.
func TestDoubleBarrierRunInterruptedLeave(t *testing.T) {
	srv := zktest.NewServer(t)
	connect := srv.ConnectString()
	dir := t.TempDir()

	// A SIGTERM: the command ends on it, the leave waits for the other member at most
	// --grace.
	logA, logB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	a := startMember(t, connect, "/cli/interrupted", logA)
	b := startMember(t, connect, "/cli/interrupted", logB)
	waitFile(t, logA, 30*time.Second)
	waitFile(t, logB, 30*time.Second)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, exitInterrupted, a.wait(t, 30*time.Second), "the interrupted member's leave is bounded")
	assert.Contains(t, a.stderr.String(), "interrupted while waiting for the other members to leave /cli/interrupted")
	assert.Equal(t, "started\nterm\n", read(t, logA))
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, b.wait(t, 30*time.Second), "the other member leaves once the interrupted one is gone")

	// A SIGTERM, then a SIGINT while it leaves (with a grace far longer than the wait
	// here): the second signal ends the leave at once. SIGINT is sent until zkcurator
	// exits, since its leave's start cannot be seen from outside; one that comes before
	// is passed on to the command or falls between the command and the leave.
	logC, logD := filepath.Join(dir, "c"), filepath.Join(dir, "d")
	c := startMember(t, connect, "/cli/interrupted-twice", logC, "--grace", "10m")
	d := startMember(t, connect, "/cli/interrupted-twice", logD)
	waitFile(t, logC, 30*time.Second)
	waitFile(t, logD, 30*time.Second)
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	deadline := time.Now().Add(30 * time.Second)
	for c.running() && time.Now().Before(deadline) {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, exitInterrupted, c.wait(t, time.Second), "a second signal ends the leave at once")
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, d.wait(t, 30*time.Second))
}
