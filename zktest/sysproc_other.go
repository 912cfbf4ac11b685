//go:build !linux

package zktest

import (
	"syscall"
	"time"
)

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// waitStopped cannot watch a process's state here: the signal is taken as delivered.
func waitStopped(int, bool, time.Duration) error { return nil }
