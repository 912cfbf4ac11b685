package main

import (
	"os"
	"syscall"
	"unsafe"
)

// sysProcAttr puts the command in process group pgid (its own when 0; so that stopping
// it stops its children too) unless told not to, and has the kernel kill it if zkcurator
// dies: without zkcurator the lock is gone, so the command must not go on (the watchdog,
// the leader of its group, stops the rest of the group).
func sysProcAttr(ownGroup bool, pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
}

// inTerminalForeground reports whether zkcurator's process group is the foreground
// process group of its controlling terminal: a Ctrl-C on that terminal then goes to the
// whole group, zkcurator and a --foreground command alike.
func inTerminalForeground() bool {
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return false
	}
	return int(pgrp) == syscall.Getpgrp()
}
