package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
)

// groupMembers is `zkcurator group members <path>`: one line per member, "<id> <payload>",
// sorted by id. A group that does not exist has no members.
func (a *app) groupMembers(ctx context.Context, args []string) error {
	const topic = "group members"
	fs := a.newFlagSet(topic)
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>"}, false)
	if err != nil {
		return err
	}
	if err := checkPath(topic, "path", pos[0]); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ids, _, err := c.Children(ctx, pos[0])
	if errors.Is(err, framework.ErrNoNode) {
		return nil
	}
	if err != nil {
		return exitWith(exitError, "listing the members of %s: %v", pos[0], err)
	}
	slices.Sort(ids)
	for _, id := range ids {
		data, _, err := c.GetData(ctx, framework.JoinPath(pos[0], id))
		if errors.Is(err, framework.ErrNoNode) {
			continue // left in between
		}
		if err != nil {
			return exitWith(exitError, "reading member %s of %s: %v", id, pos[0], err)
		}
		fmt.Fprintf(a.stdout, "%s %s\n", id, data)
	}
	return nil
}

// groupJoin is `zkcurator group join <path> <id> [--data D] [--timeout D] -- <command...>`:
// the process is a member of the group while the command runs.
func (a *app) groupJoin(ctx context.Context, args []string) error {
	const topic = "group join"
	fs := a.newFlagSet(topic)
	data := fs.String("data", "", "the member's payload (default host:pid)")
	timeout := fs.Duration("timeout", 0, "give up joining after this long (exit 75); 0 waits")
	foreground := fs.Bool("foreground", false, "run the command in zkcurator's process group")
	pos, argv, err := a.parseArgs(fs, topic, args, []string{"<path>", "<id>"}, true)
	if err != nil {
		return err
	}
	path, id := pos[0], pos[1]
	if err := checkPath(topic, "path", path); err != nil {
		return err
	}
	if err := groupmember.ValidateID(id); err != nil {
		return usagef(topic, "%s: bad id: %v", topic, err)
	}
	if err := checkDurations(topic, map[string]time.Duration{"timeout": *timeout}); err != nil {
		return err
	}
	payload := nodeData()
	dataSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "data" {
			dataSet = true
		}
	})
	if dataSet {
		payload = []byte(*data)
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	m, err := groupmember.New(c, path, id, payload)
	if err != nil {
		return usagef(topic, "%s: %v", topic, err)
	}
	defer m.Close()
	jctx, cancel := withTimeout(ctx, *timeout)
	err = m.Start(jctx)
	if err == nil {
		err = m.WaitForInitialCreate(jctx)
	}
	cancel()
	if err != nil {
		return waitFailed(ctx, "joining the group "+path, *timeout, err)
	}
	ch := child{argv: argv, grace: 10 * time.Second, foreground: *foreground, env: []string{
		"ZK_GROUP_PATH=" + path,
		"ZK_GROUP_ID=" + id,
	}}
	code, runErr := ch.run(a)
	closeErr := m.Close()
	switch {
	case runErr != nil:
		return runErr
	case code != 0:
		return &statusError{code: code}
	case closeErr != nil:
		return exitWith(exitError, "leaving the group %s: %v", path, closeErr)
	}
	return nil
}
