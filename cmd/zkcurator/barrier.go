package main

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
)

// barrierCmd parses `zkcurator barrier <verb> <path>` and returns the barrier, its client
// (close it) and the --timeout (wait only).
func (a *app) barrierCmd(ctx context.Context, verb string, args []string) (*barrier.Barrier, func() error, time.Duration, error) {
	topic := "barrier " + verb
	fs := a.newFlagSet(topic)
	var timeout *time.Duration
	if verb == "wait" {
		timeout = fs.Duration("timeout", 0, "give up waiting after this long (exit 75); 0 waits")
	}
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>"}, false)
	if err != nil {
		return nil, nil, 0, err
	}
	if err := checkPath(topic, "path", pos[0]); err != nil {
		return nil, nil, 0, err
	}
	var d time.Duration
	if timeout != nil {
		if d = *timeout; d < 0 {
			return nil, nil, 0, usagef(topic, "%s: --timeout must not be negative", topic)
		}
	}
	c, err := a.client(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	b, err := barrier.New(c, pos[0])
	if err != nil {
		c.Close()
		return nil, nil, 0, err
	}
	return b, c.Close, d, nil
}

// barrierSet is `zkcurator barrier set <path>`.
func (a *app) barrierSet(ctx context.Context, args []string) error {
	b, closeFn, _, err := a.barrierCmd(ctx, "set", args)
	if err != nil {
		return err
	}
	defer closeFn()
	return b.Set(ctx)
}

// barrierRemove is `zkcurator barrier remove <path>`.
func (a *app) barrierRemove(ctx context.Context, args []string) error {
	b, closeFn, _, err := a.barrierCmd(ctx, "remove", args)
	if err != nil {
		return err
	}
	defer closeFn()
	return b.Remove(ctx)
}

// barrierWait is `zkcurator barrier wait <path> [--timeout D]`.
func (a *app) barrierWait(ctx context.Context, args []string) error {
	b, closeFn, timeout, err := a.barrierCmd(ctx, "wait", args)
	if err != nil {
		return err
	}
	defer closeFn()
	wctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	if err := b.Wait(wctx); err != nil {
		return waitFailed(ctx, "the barrier "+b.Path(), timeout, err)
	}
	return nil
}

// doubleBarrierRun is `zkcurator doublebarrier run <path> --members N -- <command...>`.
func (a *app) doubleBarrierRun(ctx context.Context, args []string) error {
	const topic = "doublebarrier run"
	fs := a.newFlagSet(topic)
	members := fs.Int("members", 0, "how many members open the barrier (required; the same for every member)")
	timeout := fs.Duration("timeout", 0, "give up entering, or leaving, after this long (exit 75); 0 waits")
	grace := fs.Duration("grace", 10*time.Second, "once interrupted, wait this long at most to leave; a second signal stops at once")
	foreground := fs.Bool("foreground", false, "run the command in zkcurator's process group")
	pos, argv, err := a.parseArgs(fs, topic, args, []string{"<path>"}, true)
	if err != nil {
		return err
	}
	path := pos[0]
	if err := checkPath(topic, "path", path); err != nil {
		return err
	}
	if *members < 1 {
		return usagef(topic, "%s: --members N (at least 1) is required", topic)
	}
	if err := checkDurations(topic, map[string]time.Duration{"timeout": *timeout, "grace": *grace}); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	member, err := doublebarrier.New(c, path, *members)
	if err != nil {
		return err
	}
	ectx, cancel := withTimeout(ctx, *timeout)
	err = member.Enter(ectx)
	cancel()
	if err != nil {
		return waitFailed(ctx, "the double barrier "+path+" to open", *timeout, err)
	}
	ch := child{argv: argv, grace: 10 * time.Second, foreground: *foreground, env: []string{
		"ZK_BARRIER_PATH=" + path,
		"ZK_BARRIER_MEMBERS=" + strconv.Itoa(*members),
	}}
	code, runErr := ch.run(a)
	// Leave even when the command failed or was interrupted, so that the others do not
	// wait for this member in vain; but once interrupted, not for long.
	lctx, cancel := afterInterrupt(ctx, *timeout, *grace)
	defer cancel()
	leaveErr := member.Leave(lctx)
	switch {
	case runErr != nil:
		return runErr
	case code != 0:
		return &statusError{code: code}
	case leaveErr != nil:
		return waitFailed(lctx, "the other members to leave "+path, *timeout, leaveErr)
	}
	return nil
}

// afterInterrupt returns the context of a wait that comes after the command and must not
// end with the interrupt that ended the command (a double barrier's Leave, which waits
// for the other members): detached from ctx, bounded by timeout (0: none). Once zkcurator
// is interrupted (before the wait or during it) the wait ends within grace, and a further
// signal ends it at once. Its cancel func stops listening for signals.
func afterInterrupt(ctx context.Context, timeout, grace time.Duration) (context.Context, context.CancelFunc) {
	// Listen first: a signal that comes now is either in ctx already or in sigs.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, forwardedSignals...)
	wctx, cancel := withTimeout(context.WithoutCancel(ctx), timeout)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var bound <-chan time.Time // set once interrupted
		if ctx.Err() != nil {
			bound = time.After(grace)
		}
		for {
			select {
			case <-wctx.Done():
				return
			case <-sigs:
				if bound != nil {
					cancel() // a further signal
					return
				}
				bound = time.After(grace)
			case <-bound:
				cancel()
				return
			}
		}
	}()
	return wctx, func() {
		cancel()
		<-done
		signal.Stop(sigs)
	}
}
