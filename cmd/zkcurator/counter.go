package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/versioned"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
)

// counterCmd parses `zkcurator counter <verb> <path> [<n>] [--int]` (with --expect for set)
// and returns the path, the number (when names has two entries), --expect (nil when
// absent), the counter and a function that closes its client.
func (a *app) counterCmd(ctx context.Context, verb string, args []string, names []string) (path string, n int64, expect *int64, ctr counter, closeFn func() error, err error) {
	topic := "counter " + verb
	fs := a.newFlagSet(topic)
	intFlag := fs.Bool("int", false, "a 4-byte counter (Curator's DistributedAtomicInteger) instead of an 8-byte one")
	var expectStr *string // nil unless --expect was given, even empty
	if verb == "set" {
		fs.BoolVar(&a.force, "force", false, "overwrite a node that holds data of another format")
		fs.Func("expect", "set only if the counter holds this value (compare-and-set)", func(v string) error {
			expectStr = &v
			return nil
		})
	}
	pos, _, err := a.parseArgs(fs, topic, args, names, false)
	if err != nil {
		return "", 0, nil, counter{}, nil, err
	}
	if err := checkPath(topic, "path", pos[0]); err != nil {
		return "", 0, nil, counter{}, nil, err
	}
	bits := 64
	if *intFlag {
		bits = 32
	}
	if len(pos) > 1 {
		if n, err = parseCount(topic, names[1], pos[1], bits); err != nil {
			return "", 0, nil, counter{}, nil, err
		}
	}
	if expectStr != nil {
		e, err := parseCount(topic, "--expect", *expectStr, bits)
		if err != nil {
			return "", 0, nil, counter{}, nil, err
		}
		expect = &e
	}
	c, err := a.client(ctx)
	if err != nil {
		return "", 0, nil, counter{}, nil, err
	}
	if ctr, err = newCounter(c, pos[0], *intFlag); err != nil {
		c.Close()
		return "", 0, nil, counter{}, nil, err
	}
	return pos[0], n, expect, ctr, c.Close, nil
}

// parseCount parses a decimal integer of the given size in bits.
func parseCount(topic, what, s string, bits int) (int64, error) {
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, usagef(topic, "%s: bad %s %q: want a whole number that fits in %d bits (a negative one after --)", topic, what, s, bits)
	}
	return n, nil
}

// counter is the part of a Long or an Int that the commands use, in int64.
type counter struct {
	client *framework.Client
	size   int // bytes: 8 for a Long, 4 for an Int
	get    func(context.Context) (atomic.Result[int64], error)
	add    func(context.Context, int64) (atomic.Result[int64], error)
	force  func(context.Context, int64) error
	cas    func(context.Context, int64, int64) (atomic.Result[int64], error)
}

// newCounter returns the Long (or Int) at path.
func newCounter(c *framework.Client, path string, isInt bool) (counter, error) {
	if !isInt {
		l, err := atomic.NewLong(c, path)
		if err != nil {
			return counter{}, err
		}
		return counter{client: c, size: 8, get: l.Get, add: l.Add, force: l.ForceSet, cas: l.CompareAndSet}, nil
	}
	i, err := atomic.NewInt(c, path)
	if err != nil {
		return counter{}, err
	}
	widen := func(r atomic.Result[int32], err error) (atomic.Result[int64], error) {
		return atomic.Result[int64]{Succeeded: r.Succeeded, Pre: int64(r.Pre), Post: int64(r.Post), Stats: r.Stats}, err
	}
	return counter{
		client: c, size: 4,
		get:   func(ctx context.Context) (atomic.Result[int64], error) { return widen(i.Get(ctx)) },
		add:   func(ctx context.Context, d int64) (atomic.Result[int64], error) { return widen(i.Add(ctx, int32(d))) },
		force: func(ctx context.Context, n int64) error { return i.ForceSet(ctx, int32(n)) },
		cas: func(ctx context.Context, e, n int64) (atomic.Result[int64], error) {
			return widen(i.CompareAndSet(ctx, int32(e), int32(n)))
		},
	}, nil
}

// counterBytes is n in a counter's format (Curator's): size bytes, big-endian.
func counterBytes(n int64, size int) []byte {
	b := make([]byte, size)
	for i := size - 1; i >= 0; i-- {
		b[i], n = byte(n), n>>8
	}
	return b
}

// counterFormat guesses what a node of n bytes holds when a counter of size bytes was
// expected: the other size of counter, or something else.
func counterFormat(n, size int) string {
	switch {
	case n == 8 && size == 4:
		return "an 8-byte counter (counter, without --int)"
	case n == 4 && size == 8:
		return "a 4-byte integer (counter --int, or a shared count)"
	}
	return ""
}

// foreignData is the refusal to overwrite the data b at path with want (a counter, a
// shared count): b is not in that format. like names what b looks like, if known.
func foreignData(path string, b []byte, want, like string) error {
	shown := b
	if len(shown) > 16 {
		shown = shown[:16]
	}
	what := fmt.Sprintf("%d bytes (% x", len(b), shown)
	if len(b) > len(shown) {
		what += " ..."
	}
	what += ")"
	if like != "" {
		what += ": " + like
	} else if isText(b) {
		what += fmt.Sprintf(": text %q", printable(b))
	}
	return exitWith(exitError, "%s holds %s, not %s: not overwritten (--force overwrites it)", path, what, want)
}

// setChecked sets path's data to data, unless the node holds data that valid refuses (its
// error is returned, nothing written); a missing node is created (parents as
// containers). The write is bound to the node and version read, so that nothing another
// client writes after the check is overwritten unchecked: on a change it reads again.
func setChecked(ctx context.Context, c *framework.Client, path string, data []byte, valid func([]byte) error) error {
	const tries = 10
	for range tries {
		cur, st, err := c.GetData(ctx, path)
		if errors.Is(err, framework.ErrNoNode) {
			err = versioned.Create(ctx, c, path, data)
			if errors.Is(err, versioned.ErrConflict) {
				continue // made meanwhile: check what it holds
			}
			return err
		}
		if err != nil {
			return err
		}
		if err := valid(cur); err != nil {
			return err
		}
		_, err = versioned.SetDataOn(ctx, c, path, data, st.Version, st.Czxid)
		if errors.Is(err, versioned.ErrConflict) {
			continue // changed or deleted meanwhile: check again
		}
		return err
	}
	return fmt.Errorf("not set: others changed the node on each of %d tries", tries)
}

// writeFailed turns the error of a write to a counter or shared count into an exit
// status, saying plainly when the write may have been applied.
func writeFailed(ctx context.Context, what string, err error) error {
	var se *statusError
	switch {
	case errors.As(err, &se): // a refusal that says it all
		return err
	case errors.Is(err, versioned.ErrNodeReplaced):
		return exitWith(exitError, "%s: the node was deleted and made again since it was read, and the write went to the new node: read it again and decide: %v", what, err)
	case errors.Is(err, versioned.ErrUnknownOutcome):
		return exitWith(exitError, "%s: the outcome is unknown (the connection was lost while it was in flight): it may or may not have been applied: %v", what, err)
	case ctx.Err() != nil:
		return exitWith(exitInterrupted, "interrupted: %s", what)
	}
	return exitWith(exitError, "%s: %v", what, err)
}

// counterGet is `zkcurator counter get <path> [--int]`.
func (a *app) counterGet(ctx context.Context, args []string) error {
	path, _, _, ctr, closeFn, err := a.counterCmd(ctx, "get", args, []string{"<path>"})
	if err != nil {
		return err
	}
	defer closeFn()
	r, err := ctr.get(ctx)
	if err != nil {
		return writeFailed(ctx, "counter get "+path, err)
	}
	fmt.Fprintln(a.stdout, r.Post)
	return nil
}

// counterAdd is `zkcurator counter add <path> <delta> [--int]`.
func (a *app) counterAdd(ctx context.Context, args []string) error {
	path, delta, _, ctr, closeFn, err := a.counterCmd(ctx, "add", args, []string{"<path>", "<delta>"})
	if err != nil {
		return err
	}
	defer closeFn()
	r, err := ctr.add(ctx, delta)
	if err != nil {
		return writeFailed(ctx, "counter add "+path, err)
	}
	if !r.Succeeded {
		return exitWith(exitError, "counter add %s: not added: others changed the counter on each of %d tries", path, r.Stats.OptimisticTries)
	}
	fmt.Fprintln(a.stdout, r.Post)
	return nil
}

// counterSet is `zkcurator counter set <path> <value> [--int] [--expect N]`.
func (a *app) counterSet(ctx context.Context, args []string) error {
	path, n, expect, ctr, closeFn, err := a.counterCmd(ctx, "set", args, []string{"<path>", "<value>"})
	if err != nil {
		return err
	}
	defer closeFn()
	if expect == nil {
		if a.force {
			err = ctr.force(ctx, n)
		} else {
			err = setChecked(ctx, ctr.client, path, counterBytes(n, ctr.size), func(b []byte) error {
				if len(b) == 0 || len(b) == ctr.size {
					return nil
				}
				return foreignData(path, b, fmt.Sprintf("a %d-byte counter", ctr.size), counterFormat(len(b), ctr.size))
			})
		}
		if err != nil {
			return writeFailed(ctx, "counter set "+path, err)
		}
		return nil
	}
	r, err := ctr.cas(ctx, *expect, n)
	if err != nil {
		return writeFailed(ctx, "counter set "+path, err)
	}
	if !r.Succeeded {
		if r.Pre != *expect {
			return exitWith(exitConflict, "counter set %s: not set: the counter holds %d, not %d", path, r.Pre, *expect)
		}
		return exitWith(exitError, "counter set %s: not set: others changed the counter on each of %d tries", path, r.Stats.OptimisticTries)
	}
	return nil
}

// sharedCountGet is `zkcurator sharedcount get <path> [--with-version]`. It only reads: a
// missing node is an error, not created.
func (a *app) sharedCountGet(ctx context.Context, args []string) error {
	const topic = "sharedcount get"
	fs := a.newFlagSet(topic)
	withVersion := fs.Bool("with-version", false, "print the node's version after the value")
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
	data, stat, err := c.GetData(ctx, pos[0])
	if errors.Is(err, framework.ErrNoNode) {
		return exitWith(exitError, "sharedcount get %s: no shared count there (the node does not exist)", pos[0])
	}
	if err != nil {
		return writeFailed(ctx, "sharedcount get "+pos[0], err)
	}
	n, err := sharedcount.Decode(pos[0], data)
	if err != nil {
		return exitWith(exitError, "sharedcount get: %v", err)
	}
	if *withVersion {
		fmt.Fprintln(a.stdout, n, stat.Version)
	} else {
		fmt.Fprintln(a.stdout, n)
	}
	return nil
}

// sharedCountSet is `zkcurator sharedcount set <path> <value> [--version V]`.
func (a *app) sharedCountSet(ctx context.Context, args []string) error {
	const topic = "sharedcount set"
	fs := a.newFlagSet(topic)
	version := fs.Int("version", -1, "set only if the node is at this version (what get --with-version printed)")
	fs.BoolVar(&a.force, "force", false, "overwrite a node that holds data of another format")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>", "<value>"}, false)
	if err != nil {
		return err
	}
	if err := checkPath(topic, "path", pos[0]); err != nil {
		return err
	}
	n, err := parseCount(topic, "<value>", pos[1], 32)
	if err != nil {
		return err
	}
	if *version < -1 || *version > 1<<31-1 {
		return usagef(topic, "%s: --version must be a node version (0 or more)", topic)
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	path := pos[0]
	isCount := func(b []byte) error {
		if len(b) == 0 || len(b) == 4 {
			return nil
		}
		return foreignData(path, b, "a shared count", counterFormat(len(b), 4))
	}
	if *version >= 0 && !a.force {
		data, st, err := c.GetData(ctx, path)
		switch {
		case errors.Is(err, framework.ErrNoNode):
			return exitWith(exitConflict, "sharedcount set %s: not set: the node does not exist, so it is not at version %d", path, *version)
		case err != nil:
			return writeFailed(ctx, "sharedcount set "+path, err)
		case st.Version != int32(*version):
			return exitWith(exitConflict, "sharedcount set %s: not set: the node is not at version %d (it is at %d)", path, *version, st.Version)
		}
		if err := isCount(data); err != nil {
			return err
		}
	}
	if *version >= 0 {
		// One versioned setData: it never creates the node, and a retry after a lost
		// connection that cannot prove what happened is reported as unknown.
		_, err := versioned.SetData(ctx, c, path, sharedcount.Encode(int32(n)), int32(*version))
		switch {
		case errors.Is(err, framework.ErrNoNode) && !errors.Is(err, versioned.ErrUnknownOutcome):
			return exitWith(exitConflict, "sharedcount set %s: not set: the node does not exist, so it is not at version %d", path, *version)
		case errors.Is(err, versioned.ErrConflict):
			return exitWith(exitConflict, "sharedcount set %s: not set: the node is not at version %d", path, *version)
		case err != nil:
			return writeFailed(ctx, "sharedcount set "+path, err)
		}
		return nil
	}
	if !a.force {
		if err := setChecked(ctx, c, path, sharedcount.Encode(int32(n)), isCount); err != nil {
			return writeFailed(ctx, "sharedcount set "+path, err)
		}
		return nil
	}
	cnt, err := sharedcount.New(c, path, int32(n))
	if err != nil {
		return err
	}
	defer cnt.Close()
	if err := cnt.Start(ctx); err != nil {
		return writeFailed(ctx, "sharedcount set "+path, err)
	}
	if err := cnt.Set(ctx, int32(n)); err != nil {
		return writeFailed(ctx, "sharedcount set "+path, err)
	}
	return nil
}
