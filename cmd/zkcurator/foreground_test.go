//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// openPTY opens a pseudo-terminal: its master side and its slave (the terminal).
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { master.Close() })
	ioctl := func(req uintptr, arg unsafe.Pointer) {
		_, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), req, uintptr(arg))
		require.Zero(t, e, "ioctl %#x: %v", req, e)
	}
	var unlock int32
	ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n))
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// waitStopped waits until every thread of process pid is stopped (SIGSTOP).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			return false
		}
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			if err != nil {
				return false
			}
			// pid (comm) state ...: the state follows the last ')'.
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			if len(f) == 0 || f[0] != "T" {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "zkcurator did not stop")
}

// TestForegroundCtrlCReachesCommandOnce runs lock run --foreground on a terminal, as the
// session's foreground process group: a Ctrl-C there reaches the command from the
// terminal, and zkcurator must not pass its own copy on (the command would be interrupted
// twice). A SIGTERM sent to zkcurator alone is still passed on. zkcurator is stopped
// while the terminal's SIGINT reaches the command, so that the command has taken it
// before zkcurator could pass on its copy: two deliveries are never merged into one.
func TestForegroundCtrlCReachesCommandOnce(t *testing.T) {
	srv := zktest.NewServer(t)
	log := filepath.Join(t.TempDir(), "log")
	self, err := os.Executable()
	require.NoError(t, err)
	master, tty := openPTY(t)

	p := &proc{cmd: exec.Command(binary, "--session-timeout", "30s", "lock", "run", "/cli/foreground", "--foreground", "--", self),
		stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "ZK_CONNECT="+srv.ConnectString(), "ZKCURATOR_TEST_SIGNAL_LOG="+log)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = tty, p.stdout, p.stderr
	// A session of its own with the terminal as its controlling terminal: zkcurator's
	// process group is the terminal's foreground group, as when run from a shell.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.done)
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	pid := p.cmd.Process.Pid
	require.Eventually(t, func() bool { b, _ := os.ReadFile(log); return string(b) == "started\n" },
		30*time.Second, 20*time.Millisecond, "the command did not start: %s", p.stderr)

	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	waitStopped(t, pid)
	_, err = master.Write([]byte{0x03}) // Ctrl-C
	require.NoError(t, err)
	require.Eventually(t, func() bool { b, _ := os.ReadFile(log); return string(b) == "started\nint\n" },
		30*time.Second, 20*time.Millisecond, "the command did not get the terminal's SIGINT")
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	// zkcurator takes its pending SIGINT before this SIGTERM (the lower number first) and
	// passes on what it passes on in that order: the command ends on the SIGTERM.
	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	assert.Equal(t, 0, p.wait(t, 30*time.Second), "zkcurator exits with the command's status")
	assert.Equal(t, "started\nint\nterm\n", read(t, log), "one Ctrl-C reaches the command once")
}
