//go:build !linux

package curatortest

import "syscall"

// sysProcAttr returns nil: outside Linux the JVM notices the end of its stdin and exits.
func sysProcAttr() *syscall.SysProcAttr { return nil }
