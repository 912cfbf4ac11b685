//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// forwardedSignals are passed on to the command.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// signalChild sends sig to the command, or to its whole process group.
func signalChild(cmd *exec.Cmd, sig os.Signal, group bool) error {
	s, ok := sig.(syscall.Signal)
	if !ok || !group {
		return cmd.Process.Signal(sig)
	}
	return syscall.Kill(-cmd.Process.Pid, s)
}

// fromTerminal reports whether sig, which zkcurator got, is a Ctrl-C (SIGINT) that its
// terminal sent to its whole foreground process group: a command in zkcurator's process
// group (--foreground) then got it too, and passing it on would deliver it twice.
func fromTerminal(sig os.Signal) bool {
	return sig == syscall.SIGINT && inTerminalForeground()
}

func terminateChild(cmd *exec.Cmd, group bool) error {
	return signalChild(cmd, syscall.SIGTERM, group)
}

func killChild(cmd *exec.Cmd, group bool) error {
	return signalChild(cmd, syscall.SIGKILL, group)
}

// exitStatus is the command's status as a shell reports it: 128+N when signal N killed it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
