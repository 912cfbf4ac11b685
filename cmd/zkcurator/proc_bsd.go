//go:build unix && !linux

package main

import "syscall"

// sysProcAttr puts the command in a process group of its own (so that stopping it stops
// its children too) unless told not to.
func sysProcAttr(ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup}
}

// inTerminalForeground is not known here: every signal is passed on.
func inTerminalForeground() bool { return false }
