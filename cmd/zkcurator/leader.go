package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/leader"
)

// leaderRun is `zkcurator leader run <path> [--id ID] -- <command...>`: the command runs
// while this process leads the election at path, as the function of a Curator
// LeaderSelector (takeLeadership) does. A LeaderSelector rather than a LeaderLatch because
// its leadership is exactly a command's lifetime: it begins when the command may start and
// is given up when it ends, one turn per run (no auto-requeue), where a latch stays in the
// election until closed and can lead again after a loss.
func (a *app) leaderRun(ctx context.Context, args []string) error {
	const topic = "leader run"
	fs := a.newFlagSet(topic)
	id := fs.String("id", "", "the participant id (default host:pid)")
	hf := addHoldFlags(fs, "leadership is lost")
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
	if *id == "" {
		*id = string(nodeData())
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
	var opts []leader.SelectorOption
	if *revocable {
		opts = append(opts, leader.WithSelectorRevocationListener(func(*leader.Selector) { onRevoke() }))
	}
	// The selector's function hands its context (the leadership) over and holds
	// leadership until the command is done.
	leading := make(chan context.Context)
	finished := make(chan struct{})
	s, err := leader.NewSelector(c, path, *id, func(lctx context.Context) error {
		select {
		case leading <- lctx:
		case <-lctx.Done(): // closed after giving up waiting
			return nil
		}
		<-finished
		return nil
	}, opts...)
	if err != nil {
		return usagef(topic, "%s: %v", topic, err)
	}
	what := "leadership of " + path
	giveUp := func(lost bool) {
		release(ctx, a, func(rctx context.Context) error { return within(rctx, s.Close) }, lost, what)
	}
	if err := s.Start(ctx); err != nil {
		giveUp(false)
		return exitWith(exitError, "joining the election at %s: %v", path, err)
	}
	actx, cancel := withTimeout(ctx, *timeout)
	var lctx context.Context
	select {
	case lctx = <-leading:
	case <-actx.Done():
	}
	cancel()
	if lctx == nil {
		giveUp(false)
		return waitFailed(ctx, what, *timeout, actx.Err())
	}
	// The function returns (and leadership is given up) once the command is done, before
	// Close (giveUp) waits for it.
	var once sync.Once
	finish := func() { once.Do(func() { close(finished) }) }
	defer finish()
	token, err := leader.SelectorToken(lctx)
	if err != nil {
		finish()
		giveUp(true)
		return exitWith(exitLost, "%s may have been lost before the command started: %v", what, err)
	}
	env := []string{
		"ZK_LEADER_TOKEN=" + strconv.FormatInt(token, 10),
		"ZK_LEADER_ID=" + *id,
		"ZK_LEADER_PATH=" + path,
	}
	if p, err := s.Leader(lctx); err == nil && p.ID == *id {
		env = append(env, "ZK_LEADER_NODE="+p.Node)
	}
	ch := child{argv: argv, grace: *grace, foreground: *foreground, env: env}
	code, runErr := ch.run(a,
		stopper{lctx.Done(), what + " may have been lost (the connection to ZooKeeper was suspended or the session expired, or the node was deleted)"},
		stopper{revoked, "asked to give up " + what + " (revoked)"},
	)
	finish()
	giveUp(runErr != nil && code == exitLost)
	if runErr != nil {
		return runErr
	}
	return &statusError{code: code}
}

// within calls fn, a clean-up that takes no context, and waits for it until ctx ends.
// fn goes on after that; zkcurator exits soon.
func within(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leaderWho is `zkcurator leader who <path> [-v]`.
func (a *app) leaderWho(ctx context.Context, args []string) error {
	const topic = "leader who"
	fs := a.newFlagSet(topic)
	verbose := fs.Bool("v", false, "list every participant in line, the leader first: role, node, participant id")
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
		return exitWith(exitError, "%s does not exist: no election there", path)
	}
	if err != nil {
		return err
	}
	kind, err := pathKind(ctx, c, path, kids)
	if err != nil {
		return err
	}
	if err := notAnElection(path, kind, st); err != nil {
		return err
	}
	// A LeaderLatch's nodes are "latch-", a LeaderSelector's (a mutex's) "lock-".
	const whoID = "zkcurator-who" // never started: only lists
	var parts []leader.Participant
	marker := markLock
	if kind == latchKind {
		marker = markLatch
		l, err := leader.NewLatch(c, path, whoID)
		if err != nil {
			return err
		}
		parts, err = l.Participants(ctx)
		if err != nil {
			return err
		}
	} else {
		s, err := leader.NewSelector(c, path, whoID, func(context.Context) error { return nil })
		if err != nil {
			return err
		}
		parts, err = s.Participants(ctx)
		if err != nil {
			return err
		}
	}
	// Participants lists every child; only the election's nodes take part (as Observe
	// has it), and the first of those leads.
	parts = slices.DeleteFunc(parts, func(p leader.Participant) bool {
		return !strings.Contains(framework.NodeName(p.Node), marker)
	})
	if len(parts) == 0 {
		if len(kids) > 0 {
			return exitWith(exitError, "%s is not a leader election: none of its %d children is a latch- or lock- node", path, len(kids))
		}
		fmt.Fprintf(a.stderr, "zkcurator: nobody leads at %s\n", path)
		return nil
	}
	if !*verbose {
		fmt.Fprintln(a.stdout, printable([]byte(parts[0].ID)))
		return nil
	}
	for i, p := range parts {
		role := "waiting"
		if i == 0 {
			role = "leader"
		}
		fmt.Fprintf(a.stdout, "%-7s  %s  %s\n", role, p.Node, printable([]byte(p.ID)))
	}
	return nil
}

// notAnElection says what path is when its children (which make it a path of kind) or
// its stat st show that it is not a leader election: another recipe's path, or a plain
// node. A node with no children that holds no data is an election nobody is in.
func notAnElection(path string, kind recipeKind, st *framework.Stat) error {
	switch {
	case kind == latchKind || kind == lockKind:
		return nil
	case kind != notARecipe:
		return exitWith(exitError, "%s is not a leader election: it is a %s: try '%s'", path, kind, kind.holdersHint(path))
	case st.NumChildren > 0:
		return exitWith(exitError, "%s is not a leader election: none of its %d children is a latch- or lock- node", path, st.NumChildren)
	}
	return plainNode(path, "a leader election", st)
}
