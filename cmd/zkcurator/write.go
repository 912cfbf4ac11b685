package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/versioned"
)

// The commands that write a plain node: create, set and delete, as zkCli's do. They
// refuse what would break a recipe (a recipe's node, a counter's bytes, a live holder's
// node) unless --force.

// dataArg returns the data given on the command line: the argument itself, or all of
// stdin when it is "-".
func (a *app) dataArg(topic, arg string) ([]byte, error) {
	if arg != "-" {
		return []byte(arg), nil
	}
	b, err := io.ReadAll(a.stdin)
	if err != nil {
		return nil, exitWith(exitError, "%s: reading the data from stdin: %v", topic, err)
	}
	return b, nil
}

// versionFlag is --version N: a node version (0 or more), or unset.
type versionFlag struct {
	v   int32
	set bool
}

func (f *versionFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return fmt.Sprint(f.v)
}

func (f *versionFlag) Set(s string) error {
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil || n < 0 || n > 1<<31-1 || fmt.Sprint(n) != s {
		return errors.New("want a node version (0 or more)")
	}
	f.v, f.set = int32(n), true
	return nil
}

// writeFailedAt turns the error of a create, set or delete of path into the exit status
// a script can act on.
func writeFailedAt(ctx context.Context, topic, path string, err error) error {
	var se *statusError
	var tooLarge *framework.DataTooLargeError
	switch {
	case errors.As(err, &se):
		return err
	case errors.Is(err, versioned.ErrNodeReplaced):
		return exitWith(exitError, "%s %s: the node was deleted and made again since it was read, and the write went to the new node: read it again and decide", topic, path)
	case errors.Is(err, framework.ErrUnknownOutcome):
		return exitWith(exitError, "%s %s: the outcome is unknown (the connection was lost while it was in flight): it may or may not have been applied: %v", topic, path, err)
	case errors.As(err, &tooLarge):
		return exitWith(exitError, "%s %s: %d bytes of data: more than the client's limit of %d", topic, path, tooLarge.Size, tooLarge.Limit)
	case errors.Is(err, framework.ErrNoAuth):
		return exitWith(exitNoAuth, "%s %s: no permission (its ACL, or its parent's, does not let this client do it; zkcurator sends no credentials)", topic, path)
	case errors.Is(err, framework.ErrNoChildrenForEph):
		return exitWith(exitError, "%s %s: its parent is an ephemeral node, which can have no children", topic, path)
	case ctx.Err() != nil:
		return exitWith(exitInterrupted, "interrupted: %s %s", topic, path)
	}
	return exitWith(exitError, "%s %s: %v", topic, path, err)
}

// createFlags are create's flags.
type createFlags struct {
	parents, container, sequential, ephemeral bool
	ttl                                       time.Duration
}

// newCreateFlags returns create's flag set, which sets f.
func (a *app) newCreateFlags(f *createFlags) *flag.FlagSet {
	fs := a.newFlagSet("create")
	for _, b := range []struct {
		p           *bool
		long, short string
		usage       string
	}{
		{&f.parents, "parents", "p", "make missing parents (persistent, with no data)"},
		{&f.container, "container", "c", "a container node: the server deletes it some time after its last child goes"},
		{&f.sequential, "sequential", "s", "append a 10-digit sequence number to the name, and print the path made"},
		{&f.ephemeral, "ephemeral", "e", "refused: the node would go as soon as zkcurator exits"},
	} {
		fs.BoolVar(b.p, b.long, false, b.usage)
		fs.BoolVar(b.p, b.short, false, "short for --"+b.long)
	}
	fs.DurationVar(&f.ttl, "ttl", 0, "a TTL node: the server deletes it once it has had no change and no child for this long")
	fs.DurationVar(&f.ttl, "t", 0, "short for --ttl")
	return fs
}

// create is `zkcurator create <path> [<data>] [--parents] [--container | --sequential]
// [--ttl D]`.
func (a *app) create(ctx context.Context, args []string) error {
	const topic = "create"
	var f createFlags
	pos, _, err := a.parseArgs(a.newCreateFlags(&f), topic, args, []string{"<path>", "<data>"}, false)
	var ue *usageError
	if errors.As(err, &ue) && strings.HasSuffix(ue.msg, "missing <data>") { // the data is optional
		f = createFlags{}
		pos, _, err = a.parseArgs(a.newCreateFlags(&f), topic, args, []string{"<path>"}, false)
	}
	if err != nil {
		return err
	}
	path := pos[0]
	if err := checkPath(topic, "path", path); err != nil {
		return err
	}
	switch {
	case f.ephemeral:
		return usagef(topic, "%s: --ephemeral: an ephemeral node goes with zkcurator's session, which ends as soon as create exits; "+
			"to hold a node while a command runs, use 'zkcurator group join <path> <id> -- <command...>'", topic)
	case f.container && (f.sequential || f.ttl != 0):
		return usagef(topic, "%s: --container goes with neither --sequential nor --ttl", topic)
	case f.ttl < 0:
		return usagef(topic, "%s: --ttl must not be negative", topic)
	case f.ttl != 0 && f.ttl < time.Millisecond:
		return usagef(topic, "%s: --ttl is counted in milliseconds: give at least 1ms", topic)
	}
	var data []byte
	if len(pos) > 1 {
		if data, err = a.dataArg(topic, pos[1]); err != nil {
			return err
		}
	}
	mode := framework.Persistent
	switch {
	case f.container:
		mode = framework.Container
	case f.ttl != 0 && f.sequential:
		mode = framework.PersistentSequentialWithTTL
	case f.ttl != 0:
		mode = framework.PersistentWithTTL
	case f.sequential:
		mode = framework.PersistentSequential
	}
	opts := []framework.CreateOption{framework.WithMode(mode)}
	if f.ttl != 0 {
		opts = append(opts, framework.WithTTL(f.ttl))
	}
	if f.parents {
		opts = append(opts, framework.WithParents())
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	made, err := c.Create(ctx, path, data, opts...)
	switch {
	case err == nil:
		if f.sequential {
			fmt.Fprintln(a.stdout, made)
		}
		return nil
	case errors.Is(err, framework.ErrUnknownOutcome):
	case errors.Is(err, framework.ErrNodeExists):
		return exitWith(exitExists, "%s: %s exists already: nothing written ('zkcurator set' writes its data)", topic, path)
	case errors.Is(err, framework.ErrNoNode):
		return exitWith(exitNoNode, "%s: the parent %s does not exist (--parents makes it)", topic, parentOf(path))
	}
	return writeFailedAt(ctx, topic, path, err)
}

// set is `zkcurator set <path> <data> [--version N] [--force]`.
func (a *app) set(ctx context.Context, args []string) error {
	const topic = "set"
	fs := a.newFlagSet(topic)
	var version versionFlag
	fs.Var(&version, "version", "set only if the node is at this version (compare-and-set; stat prints it)")
	fs.Var(&version, "v", "short for --version")
	fs.BoolVar(&a.force, "force", false, "overwrite a recipe's node or data (a counter, a queue item, a lock node) too")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>", "<data>"}, false)
	if err != nil {
		return err
	}
	path := pos[0]
	if err := checkPath(topic, "path", path); err != nil {
		return err
	}
	data, err := a.dataArg(topic, pos[1])
	if err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if a.force && !version.set {
		_, err := versioned.SetData(ctx, c, path, data, -1)
		return setFailed(ctx, path, version, err)
	}
	// Read the node, check it, and write bound to the node and version read: nothing
	// written after the check is overwritten unchecked.
	const tries = 10
	for range tries {
		cur, st, err := c.GetData(ctx, path)
		if err != nil {
			return setFailed(ctx, path, version, err)
		}
		if version.set && st.Version != version.v {
			return exitWith(exitConflict, "%s %s: not set: the node is at version %d, not %d", topic, path, st.Version, version.v)
		}
		if !a.force {
			if err := recipeData(ctx, c, topic, path, cur); err != nil {
				return err
			}
		}
		_, err = versioned.SetDataOn(ctx, c, path, data, st.Version, st.Czxid)
		if errors.Is(err, versioned.ErrConflict) && !version.set {
			continue // changed or deleted meanwhile: check again
		}
		return setFailed(ctx, path, version, err)
	}
	return exitWith(exitError, "%s %s: not set: others changed the node on each of %d tries", topic, path, tries)
}

// setFailed is the exit status of set's write (nil: written).
func setFailed(ctx context.Context, path string, version versionFlag, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, framework.ErrUnknownOutcome):
	case errors.Is(err, framework.ErrNoNode):
		return exitWith(exitNoNode, "set: %s does not exist (zkcurator create makes it)", path)
	case errors.Is(err, versioned.ErrConflict) && version.set:
		return exitWith(exitConflict, "set %s: not set: the node is not at version %d", path, version.v)
	}
	return writeFailedAt(ctx, "set", path, err)
}

// recipeData refuses to overwrite the node at path (its data cur) when it is a recipe's
// node, as get recognises it by its name or its bytes (readHint): the recipe would then
// read data it does not understand (a counter's bytes, a queue item's), or a holder's
// node would change under it. A recipe's path (a lock's, whose children are its nodes)
// may be written: no recipe reads its data.
func recipeData(ctx context.Context, c *framework.Client, topic, path string, cur []byte) error {
	role := roleOf(path, cur, func(p string) bool { return isSemaphorePath(ctx, c, p) })
	if what, cmd := readHint(path, role, cur, notARecipe); what != "" {
		return exitWith(exitError, "%s %s: %s; '%s' reads it: not overwritten (--force overwrites it)", topic, path, what, cmd)
	}
	return nil
}

// delete is `zkcurator delete <path> [--version N] [--force]`.
func (a *app) delete(ctx context.Context, args []string) error {
	const topic = "delete"
	fs := a.newFlagSet(topic)
	var version versionFlag
	fs.Var(&version, "version", "delete only if the node is at this version (stat prints it)")
	fs.Var(&version, "v", "short for --version")
	fs.BoolVar(&a.force, "force", false, "delete a live holder's node (a lock node, a lease, a leader's node, a service instance) too")
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
	st, err := c.Exists(ctx, path) // needs no permission
	switch {
	case err != nil:
		return writeFailedAt(ctx, topic, path, err)
	case st == nil:
		return exitWith(exitNoNode, "%s: %s does not exist", topic, path)
	case version.set && st.Version != version.v:
		return exitWith(exitConflict, "%s %s: not deleted: the node is at version %d, not %d", topic, path, st.Version, version.v)
	case st.NumChildren > 0:
		return notEmpty(path, st.NumChildren)
	}
	if !a.force && st.EphemeralOwner != 0 {
		if err := liveHolder(ctx, c, path, st); err != nil {
			return err
		}
	}
	var opts []framework.DeleteOption
	if version.set {
		opts = append(opts, framework.WithVersion(version.v))
	}
	err = c.Delete(ctx, path, opts...)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, framework.ErrUnknownOutcome):
	case errors.Is(err, framework.ErrNoNode):
		return exitWith(exitNoNode, "%s: %s does not exist (deleted meanwhile)", topic, path)
	case errors.Is(err, framework.ErrBadVersion):
		return exitWith(exitConflict, "%s %s: not deleted: the node is not at version %d", topic, path, version.v)
	case errors.Is(err, framework.ErrNotEmpty):
		return notEmpty(path, -1)
	}
	return writeFailedAt(ctx, topic, path, err)
}

// notEmpty is delete's refusal of a node with n children (-1: some).
func notEmpty(path string, n int32) error {
	has := "has children"
	switch {
	case n == 1:
		has = "has 1 child"
	case n > 1:
		has = fmt.Sprintf("has %d children", n)
	}
	return exitWith(exitError, "delete %s: not deleted: it %s (delete deletes one node: delete them first; 'zkcurator ls -R %s' lists them)", path, has, path)
}

// liveHolder refuses to delete path, an ephemeral node (stat st), when it is a recipe's
// node (readHint): a lock or lease holder, a leader, a registered instance, whose owner
// would go on as if it still held it, beside another that takes its place.
func liveHolder(ctx context.Context, c *framework.Client, path string, st *framework.Stat) error {
	data, _, err := c.GetData(ctx, path)
	if err != nil {
		data = nil // not readable: known by its name alone
	}
	role := roleOf(path, data, func(p string) bool { return isSemaphorePath(ctx, c, p) })
	what, cmd := readHint(path, role, data, notARecipe)
	if what == "" {
		return nil
	}
	how := ""
	if strings.Contains(what, "lock node") || strings.Contains(what, "lease") || strings.Contains(what, "latch node") {
		how = fmt.Sprintf("; 'zkcurator lock revoke %s' asks a revocable holder to let go", path)
	}
	return exitWith(exitError, "delete %s: %s held by the live session %s ('%s' lists it): not deleted: its holder "+
		"would carry on as if it still held it%s (--force deletes it)", path, what, hex(st.EphemeralOwner), cmd, how)
}
