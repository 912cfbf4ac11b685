package zktest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// sysProcAttr makes the kernel kill a server when the test process dies, so that no JVM
// outlives an interrupted test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// waitStopped waits until every thread of process pid is stopped (stopped true) or none
// is (false): a signal is delivered some time after kill returns. A process that is gone
// counts as done.
func waitStopped(pid int, stopped bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			return nil
		}
		done := true
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			if err != nil {
				continue // the thread ended
			}
			s := string(b)
			i := strings.LastIndexByte(s, ')')
			if i < 0 || i+2 >= len(s) {
				continue
			}
			state := s[i+2]
			if state == 'Z' || state == 'X' {
				continue // exiting: it runs no more either way
			}
			if isStopped := state == 'T' || state == 't'; isStopped != stopped {
				done = false
				break
			}
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zktest: process %d not %s after %v", pid, map[bool]string{true: "stopped", false: "continued"}[stopped], timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
