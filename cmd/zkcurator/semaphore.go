package main

import (
	"context"
	"time"

	"github.com/zoocurator/zoocurator/recipes/semaphore"
)

// semaphoreRun is `zkcurator semaphore run <path> --leases N -- <command...>`.
func (a *app) semaphoreRun(ctx context.Context, args []string) error {
	const topic = "semaphore run"
	fs := a.newFlagSet(topic)
	leases := fs.Int("leases", 0, "the number of leases (required; the same for every participant)")
	timeout := fs.Duration("timeout", 0, "give up waiting after this long (exit 75); 0 waits")
	grace := fs.Duration("grace", 10*time.Second, "SIGTERM to SIGKILL when the lease is lost")
	foreground := fs.Bool("foreground", false, "run the command in zkcurator's process group")
	pos, argv, err := a.parseArgs(fs, topic, args, []string{"<path>"}, true)
	if err != nil {
		return err
	}
	path := pos[0]
	if err := checkPath(topic, "path", path); err != nil {
		return err
	}
	if *leases < 1 {
		return usagef(topic, "%s: --leases N (at least 1) is required", topic)
	}
	if err := checkDurations(topic, map[string]time.Duration{"timeout": *timeout, "grace": *grace}); err != nil {
		return err
	}

	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := semaphore.New(c, path, *leases, semaphore.WithNodeData(nodeData()))
	if err != nil {
		return err
	}
	actx, cancel := withTimeout(ctx, *timeout)
	lease, err := s.Acquire(actx)
	cancel()
	if err != nil {
		return waitFailed(ctx, "a lease of "+path, *timeout, err)
	}
	ch := child{argv: argv, grace: *grace, foreground: *foreground, env: []string{
		"ZK_LEASE_NODE=" + lease.Node(),
		"ZK_SEMAPHORE_PATH=" + path,
	}}
	code, runErr := ch.run(a,
		stopper{lease.Done(), "the lease of " + path + " may have been lost (the connection to ZooKeeper was suspended or the session expired)"})
	release(ctx, a, lease.Release, runErr != nil && code == exitLost, "the lease of "+path)
	if runErr != nil {
		return runErr
	}
	return &statusError{code: code}
}
