package zktest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// sysProcAttr makes the kernel kill a server when the test process dies, so that no JVM
// outlives an interrupted test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// waitStopState waits until every thread of process pid is stopped (stopped true) or none
// is (stopped false), reading their states from /proc. It returns early when exited is
// closed, and fails after 30 s: a signal the kernel does not carry out by then is a fault
// of the machine, not a slow test.
func waitStopState(pid int, stopped bool, exited <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		done, err := threadsInStopState(pid, stopped)
		if err != nil || done {
			return err
		}
		select {
		case <-exited:
			return nil
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d: threads not %s after 30s", pid, map[bool]string{true: "stopped", false: "running"}[stopped])
		}
		time.Sleep(time.Millisecond)
	}
}

// threadsInStopState reports whether every thread of pid is in the wanted state: 'T'
// (stopped by a signal) or not. A thread that vanished or is exiting is skipped.
func threadsInStopState(pid int, stopped bool) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil // the process is gone
		}
		return false, err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue
		}
		// The state follows the command name, which is in parentheses and may hold spaces.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		switch state := b[i+2]; {
		case state == 'Z' || state == 'X': // exiting: it will run no more either way
		case (state == 'T') != stopped:
			return false, nil
		}
	}
	return true, nil
}
