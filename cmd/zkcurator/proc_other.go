//go:build !unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// forwardedSignals are passed on to the command.
var forwardedSignals = []os.Signal{os.Interrupt}

func sysProcAttr(bool, int) *syscall.SysProcAttr { return nil }

func signalChild(cmd *exec.Cmd, sig os.Signal, _ int) error { return cmd.Process.Signal(sig) }

func terminateChild(cmd *exec.Cmd, _ int) error { return cmd.Process.Kill() }

func killChild(cmd *exec.Cmd, _ int) error { return cmd.Process.Kill() }

// watchdog is not needed here: there are no process groups to stop.
type watchdog struct{}

func startWatchdog() (*watchdog, error) { return nil, nil }

func (*watchdog) pgid() int { return 0 }

func (*watchdog) stop() {}

func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }

func inTerminalForeground() bool { return false }

func fromTerminal(os.Signal) bool { return false }
