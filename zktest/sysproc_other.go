//go:build !linux

package zktest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// waitStopState has no portable way to see a process's threads stop: it returns at once.
func waitStopState(pid int, stopped bool, exited <-chan struct{}) error { return nil }
