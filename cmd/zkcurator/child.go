package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"time"
)

// child is a command run under a lock, a lease or a barrier.
type child struct {
	argv       []string
	env        []string      // added to zkcurator's environment
	grace      time.Duration // SIGTERM → SIGKILL when stopped
	foreground bool          // stay in zkcurator's process group
}

// stopper is a reason to stop the command before it ends: a lease that may be lost, a
// revocation. Its channel closing is the signal; msg says why, on stderr.
type stopper struct {
	ch  <-chan struct{}
	msg string
}

// run starts the command and waits for it (at most two stoppers). Signals zkcurator gets
// are passed on to it, but a --foreground command's Ctrl-C, which the terminal sent it
// as well.
// When a stopper fires first, the command is sent SIGTERM, then SIGKILL after the grace
// period; run then returns a statusError with exitLost. Otherwise it returns the
// command's exit status (0 for success).
func (c child) run(a *app, stops ...stopper) (int, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	cmd.Env = append(os.Environ(), c.env...)
	// The command's process group, led by a watchdog that stops it all if zkcurator
	// dies; with --foreground, zkcurator's own (the command alone is signalled).
	var wd *watchdog
	if !c.foreground {
		var err error
		if wd, err = startWatchdog(); err != nil {
			fmt.Fprintf(a.stderr, "zkcurator: warning: no watchdog for the command (%v): "+
				"should zkcurator be killed, what the command started may go on\n", err)
		}
	}
	defer wd.stop()
	cmd.SysProcAttr = sysProcAttr(!c.foreground, wd.pgid())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		code := exitCannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = exitNotFound
		}
		return code, exitWith(code, "cannot run %s: %v", c.argv[0], err)
	}
	pgid := 0 // the process group signalled; 0: the command alone
	if !c.foreground {
		pgid = cmd.Process.Pid
		if wd != nil {
			pgid = wd.pgid()
		}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	cases := make([]<-chan struct{}, len(stops))
	for i, s := range stops {
		cases[i] = s.ch
	}
	var stopped *stopper
	var kill <-chan time.Time
	for {
		fired := -1
		select {
		case err := <-exited:
			if stopped != nil {
				return exitLost, exitWith(exitLost, "command stopped: %s", stopped.msg)
			}
			if err != nil && cmd.ProcessState == nil {
				return exitError, exitWith(exitError, "waiting for %s: %v", c.argv[0], err)
			}
			return exitStatus(cmd.ProcessState), nil
		case s := <-sigs:
			if c.foreground && fromTerminal(s) {
				continue // the command, in the terminal's foreground group too, got it
			}
			_ = signalChild(cmd, s, pgid)
			continue
		case <-kill:
			fmt.Fprintf(a.stderr, "zkcurator: the command did not stop within %v of SIGTERM: sending SIGKILL\n", c.grace)
			_ = killChild(cmd, pgid)
			kill = nil
			continue
		case <-orNil(cases, 0):
			fired = 0
		case <-orNil(cases, 1):
			fired = 1
		}
		// A stopper fired: stop the command, once.
		cases[fired] = nil
		if stopped != nil {
			continue
		}
		stopped = &stops[fired]
		fmt.Fprintf(a.stderr, "zkcurator: %s: stopping the command (SIGTERM, SIGKILL after %v)\n", stopped.msg, c.grace)
		_ = terminateChild(cmd, pgid)
		kill = time.After(c.grace)
	}
}

// orNil returns cases[i], or nil (never ready) when there is no such case.
func orNil(cases []<-chan struct{}, i int) <-chan struct{} {
	if i < len(cases) {
		return cases[i]
	}
	return nil
}

// cleanup returns a context for releasing what a command ran under: detached from ctx
// (which an interrupt may have ended) but bounded.
func cleanup(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}
