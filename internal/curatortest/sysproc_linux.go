package curatortest

import "syscall"

// sysProcAttr makes the kernel kill the JVM when the test process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
