//go:build unix

package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// forwardedSignals are passed on to the command.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// signalChild sends sig to the command's process group pgid, or to the command alone when
// pgid is 0.
func signalChild(cmd *exec.Cmd, sig os.Signal, pgid int) error {
	s, ok := sig.(syscall.Signal)
	if !ok || pgid == 0 {
		return cmd.Process.Signal(sig)
	}
	return syscall.Kill(-pgid, s)
}

// fromTerminal reports whether sig, which zkcurator got, is a Ctrl-C (SIGINT) that its
// terminal sent to its whole foreground process group: a command in zkcurator's process
// group (--foreground) then got it too, and passing it on would deliver it twice.
func fromTerminal(sig os.Signal) bool {
	return sig == syscall.SIGINT && inTerminalForeground()
}

func terminateChild(cmd *exec.Cmd, pgid int) error {
	return signalChild(cmd, syscall.SIGTERM, pgid)
}

func killChild(cmd *exec.Cmd, pgid int) error {
	return signalChild(cmd, syscall.SIGKILL, pgid)
}

// exitStatus is the command's status as a shell reports it: 128+N when signal N killed it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// watchdog leads the command's process group and kills the whole group if zkcurator
// dies before it says the command is done (SIGKILL, a crash): without zkcurator the lock
// or lease is gone, and nothing the command started may go on. The kernel's parent-death
// signal (Linux) reaches the command alone, never the processes it started. It is a
// shell that reads a pipe from zkcurator: end of file without "done" means zkcurator is
// gone, and it kills its group, itself included. It ignores the signals zkcurator passes
// on to the group; being in the group, it keeps the group's id from being reused.
type watchdog struct {
	cmd *exec.Cmd
	w   *os.File // "done" goes here
}

const watchdogScript = `trap '' INT TERM HUP; echo ready; read -r line; [ "$line" = done ] || kill -9 0`

// startWatchdog starts a watchdog in a process group of its own and waits until it is
// ready (its traps set): the command then joins its group.
func startWatchdog() (*watchdog, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript)
	cmd.Stdin, cmd.Env, cmd.Dir = r, []string{}, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	r.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	ready := make(chan error, 1)
	go func() {
		buf := make([]byte, len("ready\n"))
		_, err := io.ReadFull(out, buf)
		if err == nil && string(buf) != "ready\n" {
			err = errors.New("unexpected output " + string(buf))
		}
		ready <- err
	}()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case err = <-ready:
	case <-timer.C:
		err = errors.New("not ready within 10s")
	}
	if err != nil {
		_ = cmd.Process.Kill()
		w.Close()
		_ = cmd.Wait()
		<-ready
		return nil, err
	}
	return &watchdog{cmd: cmd, w: w}, nil
}

// pgid is the process group the command joins: the watchdog's (0 without one).
func (d *watchdog) pgid() int {
	if d == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

// stop tells the watchdog that the command is done, and waits for it to exit.
func (d *watchdog) stop() {
	if d == nil {
		return
	}
	_, _ = d.w.Write([]byte("done\n")) // fails if it was killed with the group: fine
	d.w.Close()
	_ = d.cmd.Wait()
}
