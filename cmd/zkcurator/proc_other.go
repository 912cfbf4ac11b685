//go:build !unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// forwardedSignals are passed on to the command.
var forwardedSignals = []os.Signal{os.Interrupt}

func sysProcAttr(bool) *syscall.SysProcAttr { return nil }

func signalChild(cmd *exec.Cmd, sig os.Signal, _ bool) error { return cmd.Process.Signal(sig) }

func terminateChild(cmd *exec.Cmd, _ bool) error { return cmd.Process.Kill() }

func killChild(cmd *exec.Cmd, _ bool) error { return cmd.Process.Kill() }

func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }

func inTerminalForeground() bool { return false }

func fromTerminal(os.Signal) bool { return false }
