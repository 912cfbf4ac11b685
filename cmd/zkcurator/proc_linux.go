package main

import "syscall"

// sysProcAttr puts the command in a process group of its own (so that stopping it stops
// its children too) unless told not to, and has the kernel kill it if zkcurator dies:
// without zkcurator the lock is gone, so the command must not go on.
func sysProcAttr(ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: syscall.SIGKILL}
}
