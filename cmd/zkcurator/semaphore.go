package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zoocurator/zoocurator/framework"

	"github.com/zoocurator/zoocurator/recipes/semaphore"
)

// semaphoreRun is `zkcurator semaphore run <path> --leases N -- <command...>`.
func (a *app) semaphoreRun(ctx context.Context, args []string) error {
	const topic = "semaphore run"
	fs := a.newFlagSet(topic)
	leases := fs.Int("leases", 0, "the number of leases (required; the same for every participant)")
	hf := addHoldFlags(fs, "the lease is lost")
	timeout, grace, revocable, foreground := hf.timeout, hf.grace, hf.revocable, hf.foreground
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
	if err := hf.check(topic); err != nil {
		return err
	}

	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := refuseForeign(ctx, c, path, "semaphore"); err != nil {
		return err
	}
	revoked, onRevoke := revocation()
	opts := []semaphore.Option{semaphore.WithNodeData(nodeData())}
	if *revocable {
		opts = append(opts, semaphore.WithRevocationListener(func(*semaphore.Lease) { onRevoke() }))
	}
	s, err := semaphore.New(c, path, *leases, opts...)
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
		stopper{lease.Done(), "the lease of " + path + " may have been lost (the connection to ZooKeeper was suspended or the session expired)"},
		stopper{revoked, "asked to give up the lease of " + path + " (revoked)"},
	)
	release(ctx, a, lease.Release, runErr != nil && code == exitLost, "the lease of "+path)
	if runErr != nil {
		return runErr
	}
	return &statusError{code: code}
}

// semaphoreHolders is `zkcurator semaphore holders <path> [--leases N]`.
func (a *app) semaphoreHolders(ctx context.Context, args []string) error {
	const topic = "semaphore holders"
	fs := a.newFlagSet(topic)
	leases := fs.Int("leases", 0, "the semaphore's number of leases: lease nodes beyond it are shown as waiting")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>"}, false)
	if err != nil {
		return err
	}
	path := pos[0]
	if err := checkPath(topic, "path", path); err != nil {
		return err
	}
	if *leases < 0 {
		return usagef(topic, "%s: --leases must not be negative", topic)
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	kids, st, err := c.Children(ctx, path)
	if errors.Is(err, framework.ErrNoNode) {
		return exitWith(exitError, "%s does not exist: no semaphore there", path)
	}
	if err != nil {
		return err
	}
	kind, err := pathKind(ctx, c, path, kids)
	if err != nil {
		return err
	}
	if kind != semaphoreKind {
		if err := plainNode(path, "a semaphore", st); err != nil {
			return err
		}
		if len(kids) == 0 {
			fmt.Fprintf(a.stderr, "zkcurator: nobody holds a lease of the semaphore at %s\n", path)
			return nil
		}
		if err := notALock(path, kind, len(kids)); err != nil {
			return exitWith(exitError, "%s is not a semaphore (its children are not a semaphore's leases and locks)", path)
		}
		return exitWith(exitError, "%s is a lock, not a semaphore: try 'zkcurator lock holders %s'", path, path)
	}
	nodes := func(dir, marker string) ([]string, error) {
		names, _, err := c.Children(ctx, framework.JoinPath(path, dir))
		if errors.Is(err, framework.ErrNoNode) {
			return nil, nil
		}
		framework.SortBySequence(names, marker)
		return names, err
	}
	leaseNodes, err := nodes(semLeases, markLease)
	if err != nil {
		return err
	}
	lockNodes, err := nodes(semLocks, markLock)
	if err != nil {
		return err
	}
	shown := 0
	show := func(role, node string) error {
		data, _, err := c.GetData(ctx, node)
		if errors.Is(err, framework.ErrNoNode) {
			return nil // released meanwhile
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%-7s  %s  %s\n", role, node, printable(data))
		shown++
		return nil
	}
	for i, k := range leaseNodes {
		role := "holder"
		if *leases > 0 && i >= *leases {
			role = "waiting" // made while holding the inner lock, waiting for a lease to free
		}
		if err := show(role, framework.JoinPath(path, "leases", k)); err != nil {
			return err
		}
	}
	// The first inner lock node belongs to the acquirer making or waiting on its lease
	// node (listed above); the others queue behind it.
	for i, k := range lockNodes {
		if i == 0 || !strings.Contains(k, "lock-") {
			continue
		}
		if err := show("waiting", framework.JoinPath(path, "locks", k)); err != nil {
			return err
		}
	}
	if shown == 0 {
		fmt.Fprintf(a.stderr, "zkcurator: nobody holds a lease of the semaphore at %s\n", path)
	}
	return nil
}
