//go:build unix && !linux

package main

import "syscall"

// sysProcAttr puts the command in process group pgid (its own when 0; so that stopping
// it stops its children too) unless told not to.
func sysProcAttr(ownGroup bool, pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup, Pgid: pgid}
}

// inTerminalForeground is not known here: every signal is passed on.
func inTerminalForeground() bool { return false }
