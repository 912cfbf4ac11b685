package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/mutex"
)

// lockRun is `zkcurator lock run <path> -- <command...>`.
func (a *app) lockRun(ctx context.Context, args []string) error {
	const topic = "lock run"
	fs := a.newFlagSet(topic)
	hf := addHoldFlags(fs, "the lock is lost")
	timeout, grace, revocable, foreground := hf.timeout, hf.grace, hf.revocable, hf.foreground
	pos, argv, err := a.parseArgs(fs, topic, args, []string{"<path>"}, true)
	if err != nil {
		return err
	}
	path := pos[0]
	if err := checkPath(topic, "path", path); err != nil {
		return err
	}
	if err := hf.check(topic); err != nil {
		return err
	}

	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := refuseForeign(ctx, c, path, "lock"); err != nil {
		return err
	}
	revoked, onRevoke := revocation()
	opts := []mutex.Option{mutex.WithNodeData(nodeData())}
	if *revocable {
		opts = append(opts, mutex.WithRevocationListener(func(*mutex.Lease) { onRevoke() }))
	}
	m, err := mutex.New(c, path, opts...)
	if err != nil {
		return err
	}
	actx, cancel := withTimeout(ctx, *timeout)
	lease, err := m.Acquire(actx)
	cancel()
	if err != nil {
		return waitFailed(ctx, "the lock on "+path, *timeout, err)
	}
	token, err := lease.Token(ctx)
	if err != nil {
		release(ctx, a, lease.Release, false, "the lock on "+path)
		return fmt.Errorf("reading the fencing token: %w", err)
	}

	ch := child{argv: argv, grace: *grace, foreground: *foreground, env: []string{
		"ZK_LOCK_TOKEN=" + strconv.FormatInt(token, 10),
		"ZK_LOCK_NODE=" + lease.Node(),
		"ZK_LOCK_PATH=" + path,
	}}
	code, runErr := ch.run(a,
		stopper{lease.Done(), "the lock on " + path + " may have been lost (the connection to ZooKeeper was suspended or the session expired)"},
		stopper{revoked, "asked to give up the lock on " + path + " (revoked)"},
	)
	release(ctx, a, lease.Release, runErr != nil && code == exitLost, "the lock on "+path)
	if runErr != nil {
		return runErr
	}
	return &statusError{code: code}
}

// revocation returns a channel that is closed the first time onRevoke is called: the
// stopper of a --revocable command.
func revocation() (revoked <-chan struct{}, onRevoke func()) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

// release gives back what a command ran under, within a bounded time, and reports a
// failure on stderr only: the command's status is what matters to the caller. After a
// loss (lost), it tries only briefly: the node is ephemeral and goes with the session,
// and zkcurator should not linger while ZooKeeper does not answer.
func release(ctx context.Context, a *app, fn func(context.Context) error, lost bool, what string) {
	d := 5 * time.Second
	if lost {
		d = time.Second
	}
	rctx, cancel := cleanup(ctx, d)
	defer cancel()
	err := fn(rctx)
	switch {
	case err == nil:
	case lost:
		// Already said: the lease may have been lost.
	case errors.Is(err, mutex.ErrLeaseLost):
		fmt.Fprintf(a.stderr, "zkcurator: warning: %s may have been lost before it was released\n", what)
	default:
		fmt.Fprintf(a.stderr, "zkcurator: warning: releasing %s: %v (its node goes with the session)\n", what, err)
	}
}

// lockHolders is `zkcurator lock holders <path>`.
func (a *app) lockHolders(ctx context.Context, args []string) error {
	const topic = "lock holders"
	fs := a.newFlagSet(topic)
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>"}, false)
	if err != nil {
		return err
	}
	path := pos[0]
	if err := checkPath(topic, "path", path); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	kids, st, err := c.Children(ctx, path)
	if errors.Is(err, framework.ErrNoNode) {
		return exitWith(exitError, "%s does not exist: no lock there", path)
	}
	if err != nil {
		return err
	}
	kind, err := pathKind(ctx, c, path, kids)
	if err != nil {
		return err
	}
	if err := notALock(path, kind, len(kids)); err != nil {
		return err
	}
	if err := plainNode(path, "a lock", st); err != nil {
		return err
	}
	m, err := mutex.New(c, path)
	if err != nil {
		return err
	}
	parts, err := m.Participants(ctx)
	if err != nil {
		return err
	}
	role := "holder"
	for _, p := range parts {
		if !strings.Contains(framework.NodeName(p), markLock) {
			continue // not a lock node
		}
		data, _, err := c.GetData(ctx, p)
		if errors.Is(err, framework.ErrNoNode) {
			continue // released meanwhile
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%-7s  %s  %s\n", role, p, printable(data))
		role = "waiting"
	}
	if role == "holder" {
		fmt.Fprintf(a.stderr, "zkcurator: nobody holds the lock at %s\n", path)
	}
	return nil
}

// notALock says what path is when its children (n of them, which make it a path of
// kind) show that it is not a lock: a semaphore, a leader latch, a read-write lock, or
// something else.
func notALock(path string, kind recipeKind, n int) error {
	switch {
	case kind == semaphoreKind:
		return exitWith(exitError, "%s is a %s, not a lock: try 'zkcurator semaphore holders %s'", path, kind, path)
	case kind == latchKind:
		return exitWith(exitError, "%s is a %s, not a lock: try 'zkcurator leader who -v %s'", path, kind, path)
	case kind == rwLockKind:
		return exitWith(exitError, "%s is a %s, not a lock", path, kind)
	case n > 0 && kind != lockKind:
		return exitWith(exitError, "%s is not a lock: none of its %d children is a lock node", path, n)
	}
	return nil
}

// refuseForeign refuses to run a command under a lock of kind at path when the path's
// children are another recipe's nodes, whose holder ours would not exclude: the command
// would run beside a leader latch's leader, or a semaphore's or a lock's holder. Kind
// "lock" is a mutex's lock- nodes (lock run, and leader run: a LeaderSelector is a
// mutex); "semaphore" is the leases and locks children (pathKind). A path that is not there yet, or
// holds only other nodes, is fine. It creates nothing.
func refuseForeign(ctx context.Context, c *framework.Client, path, kind string) error {
	kids, _, err := c.Children(ctx, path)
	if errors.Is(err, framework.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing %s: %w", path, err)
	}
	found, err := pathKind(ctx, c, path, kids)
	if err != nil {
		return fmt.Errorf("listing %s: %w", path, err)
	}
	const beside = "not running the command beside its holder"
	switch {
	case found == latchKind:
		return exitWith(exitError, "%s is a %s: not running the command beside its leader", path, found)
	case found == rwLockKind:
		return exitWith(exitError, "%s is a %s: %s", path, found, beside)
	case kind == "lock" && found == semaphoreKind:
		// Either child: the server deletes each of these containers once it is empty.
		return exitWith(exitError, "%s is a %s: %s", path, found, beside)
	case kind == "semaphore" && found == lockKind:
		return exitWith(exitError, "%s is a lock or a leader election (lock- nodes), not a semaphore: %s", path, beside)
	}
	return nil
}

// printable returns data as text when it is, and a short description otherwise.
func printable(data []byte) string {
	s := string(data)
	if len(data) == 0 {
		return "-"
	}
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || len(s) > 200 {
		return fmt.Sprintf("(%d bytes)", len(data))
	}
	return s
}

// lockRevoke is `zkcurator lock revoke <node>`.
func (a *app) lockRevoke(ctx context.Context, args []string) error {
	const topic = "lock revoke"
	fs := a.newFlagSet(topic)
	wait := fs.Duration("wait", 0, "wait this long for the node to go (exit 75 if it stays)")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<node>"}, false)
	if err != nil {
		return err
	}
	node := pos[0]
	if err := checkPath(topic, "node", node); err != nil {
		return err
	}
	if err := checkDurations(topic, map[string]time.Duration{"wait": *wait}); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := c.Exists(ctx, node)
	if err != nil {
		return err
	}
	if st == nil {
		fmt.Fprintf(a.stderr, "zkcurator: %s does not exist: nobody to revoke\n", node)
		return nil
	}
	if st.EphemeralOwner == 0 {
		return exitWith(exitError, "%s is not a lock node (not ephemeral): not writing to it", node)
	}
	if err := mutex.Revoke(ctx, c, node); err != nil {
		return err
	}
	if *wait == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	for {
		st, ev, err := c.ExistsW(wctx, node)
		if err == nil && st == nil {
			return nil
		}
		if err == nil {
			select {
			case <-ev.Done():
				continue
			case <-wctx.Done():
				err = wctx.Err()
			}
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return exitWith(exitTimeout, "%s is still there after %v: its holder may not be revocable. Only a holder "+
				"made revocable lets go when asked: start it with 'zkcurator lock run --revocable' (or semaphore run, "+
				"leader run --revocable), a Go mutex or semaphore WithRevocationListener, or Curator's makeRevocable", node, *wait)
		}
		return waitFailed(ctx, node+" to go", *wait, err)
	}
}
