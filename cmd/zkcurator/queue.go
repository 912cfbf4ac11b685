package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// queueKinds are the values of --kind: Curator's DistributedQueue, DistributedIdQueue,
// DistributedPriorityQueue, DistributedDelayQueue and SimpleDistributedQueue.
var queueKinds = []string{"plain", "id", "priority", "delay", "simple"}

// itemQueue is what take and list need of the four distributed queues.
type itemQueue interface {
	ConsumeOne(ctx context.Context, h queue.Handler[[]byte]) error
	Items(ctx context.Context) ([]string, error)
}

func newItemQueue(c *framework.Client, kind, path string, opts ...queue.Option) (itemQueue, error) {
	switch kind {
	case "id":
		return queue.NewID(c, path, queue.Bytes{}, opts...)
	case "priority":
		return queue.NewPriority(c, path, queue.Bytes{}, opts...)
	case "delay":
		return queue.NewDelay(c, path, queue.Bytes{}, opts...)
	}
	return queue.New(c, path, queue.Bytes{}, opts...)
}

func checkKind(topic, kind string) error {
	for _, k := range queueKinds {
		if k == kind {
			return nil
		}
	}
	return usagef(topic, "%s: --kind must be one of %s", topic, strings.Join(queueKinds, ", "))
}

// queuePut is `zkcurator queue put <path> <data> [--priority N | --delay D | --id ID | --kind K]`.
func (a *app) queuePut(ctx context.Context, args []string) error {
	const topic = "queue put"
	fs := a.newFlagSet(topic)
	prio := fs.String("priority", "", "put into a priority queue with this priority (a 32-bit integer, lowest first)")
	delay := fs.Duration("delay", 0, "put into a delay queue, due after this long")
	id := fs.String("id", "", "put into an id queue with this id")
	kind := fs.String("kind", "", "the queue's kind: plain, id, priority, delay or simple (default: plain, or what --priority, --delay or --id say)")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>", "<data>"}, false)
	if err != nil {
		return err
	}
	if err := checkPath(topic, "path", pos[0]); err != nil {
		return err
	}
	set := 0
	for _, on := range []bool{*prio != "", *delay != 0, *id != ""} {
		if on {
			set++
		}
	}
	if set > 1 {
		return usagef(topic, "%s: --priority, --delay and --id exclude each other", topic)
	}
	if *delay < 0 {
		return usagef(topic, "%s: --delay must not be negative", topic)
	}
	implied := "plain"
	switch {
	case *prio != "":
		implied = "priority"
	case *delay != 0:
		implied = "delay"
	case *id != "":
		implied = "id"
	}
	if *kind != "" {
		if err := checkKind(topic, *kind); err != nil {
			return err
		}
		if *kind != implied && (implied != "plain" || *kind != "simple") {
			if implied == "plain" {
				return usagef(topic, "%s: --kind %s needs --%s", topic, *kind, *kind)
			}
			return usagef(topic, "%s: --kind %s does not go with --%s", topic, *kind, implied)
		}
	}
	var p int64
	if *prio != "" {
		if p, err = strconv.ParseInt(*prio, 10, 32); err != nil {
			return usagef(topic, "%s: bad --priority %q: want a whole number that fits in 32 bits", topic, *prio)
		}
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	data := []byte(pos[1])
	var node string
	switch {
	case *kind == "simple":
		q, qerr := queue.NewSimple(c, pos[0], queue.Bytes{})
		if qerr != nil {
			return qerr
		}
		node, err = q.Offer(ctx, data)
	case *prio != "":
		q, qerr := queue.NewPriority(c, pos[0], queue.Bytes{})
		if qerr != nil {
			return qerr
		}
		node, err = q.Put(ctx, data, int32(p))
	case *delay != 0:
		q, qerr := queue.NewDelay(c, pos[0], queue.Bytes{})
		if qerr != nil {
			return qerr
		}
		node, err = q.Put(ctx, data, time.Now().Add(*delay))
	case *id != "":
		q, qerr := queue.NewID(c, pos[0], queue.Bytes{})
		if qerr != nil {
			return qerr
		}
		node, err = q.Put(ctx, data, *id)
	default:
		q, qerr := queue.New(c, pos[0], queue.Bytes{})
		if qerr != nil {
			return qerr
		}
		node, err = q.Put(ctx, data)
	}
	if err != nil && node == "" {
		return err
	}
	fmt.Fprintln(a.stdout, node)
	if err != nil { // queued, perhaps twice
		return exitWith(exitError, "%v", err)
	}
	return nil
}

// queueTake is `zkcurator queue take <path> [--timeout D] [--lock-path P] [--kind K]`.
func (a *app) queueTake(ctx context.Context, args []string) error {
	const topic = "queue take"
	fs := a.newFlagSet(topic)
	timeout := fs.Duration("timeout", 0, "give up waiting for an item after this long (exit 75); 0 waits")
	lockPath := fs.String("lock-path", "", "the queue's lock path (Curator's lockPath), for safe consumption")
	kind := fs.String("kind", "plain", "the queue's kind, which sets the order: plain, id, priority, delay or simple")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>"}, false)
	if err != nil {
		return err
	}
	if err := checkPath(topic, "path", pos[0]); err != nil {
		return err
	}
	if *kind == "simple" && *lockPath != "" {
		return usagef(topic, "%s: a simple queue has no --lock-path (Curator's SimpleDistributedQueue takes an item by deleting it)", topic)
	}
	if *lockPath != "" {
		if err := checkPath(topic, "--lock-path", *lockPath); err != nil {
			return err
		}
	}
	if err := checkDurations(topic, map[string]time.Duration{"timeout": *timeout}); err != nil {
		return err
	}
	if err := checkKind(topic, *kind); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	wctx, cancel := withTimeout(ctx, *timeout)
	defer cancel()
	if *kind == "simple" {
		q, err := queue.NewSimple(c, pos[0], queue.Bytes{})
		if err != nil {
			return err
		}
		item, err := q.Take(wctx)
		if errors.Is(err, queue.ErrMaybeGone) {
			return exitWith(exitError, "%v", err)
		}
		if err != nil {
			return waitFailed(ctx, "an item in "+pos[0], *timeout, err)
		}
		fmt.Fprintln(a.stdout, itemText(item))
		return nil
	}
	var opts []queue.Option
	if *lockPath != "" {
		opts = append(opts, queue.WithLockPath(*lockPath))
	}
	opts = append(opts, queue.WithErrorListener(func(err error) { fmt.Fprintf(a.stderr, "zkcurator: %v\n", err) }))
	q, err := newItemQueue(c, *kind, pos[0], opts...)
	if err != nil {
		return err
	}
	err = q.ConsumeOne(wctx, func(_ context.Context, item []byte) error {
		fmt.Fprintln(a.stdout, itemText(item))
		return nil
	})
	if err != nil {
		return waitFailed(ctx, "an item in "+pos[0], *timeout, err)
	}
	return nil
}

// queueList is `zkcurator queue list <path> [--kind K]`.
func (a *app) queueList(ctx context.Context, args []string) error {
	const topic = "queue list"
	fs := a.newFlagSet(topic)
	kind := fs.String("kind", "plain", "the queue's kind, which sets the order: plain, id, priority, delay or simple")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>"}, false)
	if err != nil {
		return err
	}
	if err := checkPath(topic, "path", pos[0]); err != nil {
		return err
	}
	if err := checkKind(topic, *kind); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := c.Exists(ctx, pos[0])
	if err != nil && !errors.Is(err, framework.ErrNoNode) {
		return err
	}
	if st == nil {
		return exitWith(exitError, "%s: no queue there", pos[0])
	}
	var q interface {
		Items(ctx context.Context) ([]string, error)
	}
	if *kind == "simple" {
		q, err = queue.NewSimple(c, pos[0], queue.Bytes{})
	} else {
		q, err = newItemQueue(c, *kind, pos[0])
	}
	if err != nil {
		return err
	}
	names, err := q.Items(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		data, _, err := c.GetData(ctx, framework.JoinPath(pos[0], name))
		if errors.Is(err, framework.ErrNoNode) {
			continue // taken meanwhile
		}
		if err != nil {
			return err
		}
		if *kind == "simple" { // the item's bytes as they are
			fmt.Fprintf(a.stdout, "%s %s\n", name, itemText(data))
			continue
		}
		items, err := queue.DecodeItems(data)
		if err != nil {
			fmt.Fprintf(a.stdout, "%s !not an item: %v\n", name, err)
			continue
		}
		for _, it := range items {
			fmt.Fprintf(a.stdout, "%s %s\n", name, itemText(it))
		}
	}
	if len(names) == 0 {
		msg, foreign := emptyQueue(ctx, c, pos[0], *kind)
		if foreign {
			return exitWith(exitError, "%s", msg)
		}
		fmt.Fprintf(a.stderr, "zkcurator: %s\n", msg)
	}
	return nil
}

// emptyQueue says why the queue at path has no items of kind: it is empty, it holds
// the nodes of the other layout (a simple queue's qn-, the others' queue-: the queue is
// of another kind than --kind says), or it is no queue but a lock's or an election's
// path (foreign).
func emptyQueue(ctx context.Context, c *framework.Client, path, kind string) (msg string, foreign bool) {
	other, hint := simpleItem, "a simple queue: --kind simple"
	if kind == "simple" {
		other, hint = queueItem, "a distributed queue: --kind plain, id, priority or delay"
	}
	kids, _, err := c.Children(ctx, path)
	if err != nil {
		return path + " is empty", false
	}
	if k, err := pathKind(ctx, c, path, kids); err == nil && k.isLockLike() {
		return fmt.Sprintf("%s is not a queue: it holds a %s's nodes, not queue items: try '%s'",
			path, k.noun(), k.holdersHint(path)), true
	}
	n := 0
	for _, k := range kids {
		if strings.HasPrefix(k, other) {
			n++
		}
	}
	if n == 0 {
		return path + " is empty", false
	}
	nodes := "nodes"
	if n == 1 {
		nodes = "node"
	}
	return fmt.Sprintf("%s has no %s items; it has %d %s %s (%s)", path, kind, n, other, nodes, hint), false
}

// itemText returns b as it is when it is one line of printable UTF-8, else Go-quoted.
func itemText(b []byte) string {
	s := string(b)
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) < 0 && !strings.HasPrefix(s, `"`) {
		return s
	}
	return strconv.Quote(s)
}
