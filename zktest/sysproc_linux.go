package zktest

import "syscall"

// sysProcAttr makes the kernel kill a server when the test process dies, so that no JVM
// outlives an interrupted test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
