package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zoocurator/zoocurator/framework"
)

// The read-only commands: ls, get, stat and tree. They write nothing.

// readPath validates a path to read: ZooKeeper's path rules (the root and /zookeeper
// may be read).
func readPath(topic, p string) error {
	if err := framework.ValidatePath(p); err != nil {
		return usagef(topic, "%s: bad path: %v", topic, err)
	}
	return nil
}

// readFailed turns the error of a read of path into the exit status a script can act on.
func readFailed(ctx context.Context, path string, err error) error {
	switch {
	case errors.Is(err, framework.ErrNoNode):
		return exitWith(exitNoNode, "%s does not exist", path)
	case errors.Is(err, framework.ErrNoAuth):
		return exitWith(exitNoAuth, "%s: no permission to read it (its ACL does not let this client read; zkcurator sends no credentials)", path)
	case ctx.Err() != nil:
		return exitWith(exitInterrupted, "interrupted while reading %s", path)
	}
	return exitWith(exitError, "reading %s: %v", path, err)
}

// ls is `zkcurator ls [-R] <path> [--json]`.
func (a *app) ls(ctx context.Context, args []string) error {
	const topic = "ls"
	fs := a.newFlagSet(topic)
	recursive := fs.Bool("R", false, "list every node below <path>, a full path a line")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>"}, false)
	if err != nil {
		return err
	}
	path := pos[0]
	if err := readPath(topic, path); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	kids, st, err := c.Children(ctx, path)
	if err != nil {
		return readFailed(ctx, path, err)
	}
	orderChildren(framework.NodeName(path), kids)
	if !*recursive {
		if *asJSON {
			return a.printJSON(struct {
				Path     string   `json:"path"`
				Children []string `json:"children"`
			}{path, orEmpty(kids)})
		}
		for _, k := range kids {
			fmt.Fprintln(a.stdout, k)
		}
		return nil
	}
	var all []string
	w := walker{c: c, a: a}
	err = w.walk(ctx, path, kids, st, func(p string, _ []string, _ *framework.Stat, _ bool) error {
		if p == path {
			return nil
		}
		if *asJSON {
			all = append(all, p)
		} else {
			fmt.Fprintln(a.stdout, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if *asJSON {
		if err := a.printJSON(struct {
			Path        string   `json:"path"`
			Descendants []string `json:"descendants"`
		}{path, orEmpty(all)}); err != nil {
			return err
		}
	}
	return w.status()
}

// get is `zkcurator get <path> [--json]`.
func (a *app) get(ctx context.Context, args []string) error {
	const topic = "get"
	fs := a.newFlagSet(topic)
	asJSON := fs.Bool("json", false, "print the data and the node's stat as JSON")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>"}, false)
	if err != nil {
		return err
	}
	path := pos[0]
	if err := readPath(topic, path); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	data, st, err := c.GetData(ctx, path)
	if err != nil {
		return readFailed(ctx, path, err)
	}
	kind := notARecipe
	if st.NumChildren > 0 {
		if kids, _, err := c.Children(ctx, path); err == nil {
			kind, _ = pathKind(ctx, c, path, kids)
		}
	}
	semaphoreAt := func(p string) bool { return isSemaphorePath(ctx, c, p) }
	what, cmd := readHint(path, roleOf(path, data, semaphoreAt), data, kind)
	if *asJSON {
		out := struct {
			Path     string   `json:"path"`
			Data     string   `json:"data"`
			Encoding string   `json:"encoding"`
			Stat     statJSON `json:"stat"`
			Recipe   string   `json:"recipe,omitempty"` // what recipe's node it is, when zkcurator can tell
			ReadWith string   `json:"readWith,omitempty"`
		}{Path: path, Data: string(data), Encoding: "utf-8", Stat: newStatJSON(path, st), Recipe: what, ReadWith: cmd}
		if !utf8.Valid(data) {
			out.Data, out.Encoding = base64.StdEncoding.EncodeToString(data), "base64"
		}
		return a.printJSON(out)
	}
	switch {
	case len(data) == 0:
	case isText(data):
		a.stdout.Write(data)
		if data[len(data)-1] != '\n' {
			fmt.Fprintln(a.stdout)
		}
	default:
		fmt.Fprintln(a.stdout, strconv.Quote(string(data)))
	}
	if what != "" {
		fmt.Fprintf(a.stderr, "zkcurator: %s: %s; '%s' reads it\n", path, what, cmd)
	}
	return nil
}

// isText reports whether b is UTF-8 text: printable, with tabs and line breaks.
func isText(b []byte) bool {
	return utf8.Valid(b) && strings.IndexFunc(string(b), func(r rune) bool {
		return !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r'
	}) < 0
}

// stat is `zkcurator stat <path> [--json]`.
func (a *app) stat(ctx context.Context, args []string) error {
	const topic = "stat"
	fs := a.newFlagSet(topic)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>"}, false)
	if err != nil {
		return err
	}
	path := pos[0]
	if err := readPath(topic, path); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := c.Exists(ctx, path) // needs no permission: ZooKeeper checks no ACL for exists
	if err == nil && st == nil {
		err = framework.ErrNoNode
	}
	if err != nil {
		return readFailed(ctx, path, err)
	}
	s := newStatJSON(path, st)
	if *asJSON {
		return a.printJSON(s)
	}
	for _, kv := range [][2]string{
		{"path", path}, {"czxid", s.Czxid}, {"mzxid", s.Mzxid}, {"pzxid", s.Pzxid},
		{"ctime", formatMillis(s.Ctime)}, {"mtime", formatMillis(s.Mtime)},
		{"version", strconv.Itoa(int(s.Version))}, {"cversion", strconv.Itoa(int(s.Cversion))},
		{"aversion", strconv.Itoa(int(s.Aversion))}, {"ephemeralOwner", s.EphemeralOwner}, {"mode", s.Mode},
		{"dataLength", strconv.Itoa(int(s.DataLength))}, {"numChildren", strconv.Itoa(int(s.NumChildren))},
	} {
		fmt.Fprintf(a.stdout, "%-15s %s\n", kv[0], kv[1])
	}
	if role := roleOf(path, nil, func(p string) bool { return isSemaphorePath(ctx, c, p) }); role != "" {
		fmt.Fprintf(a.stdout, "%-15s %s\n", "recipe", role)
	}
	return nil
}

// tree is `zkcurator tree [<path>] [--json]`.
func (a *app) tree(ctx context.Context, args []string) error {
	const topic = "tree"
	fs := a.newFlagSet(topic)
	asJSON := fs.Bool("json", false, "print a JSON array, one object a node")
	pos, _, err := a.parseArgs(fs, topic, args, []string{"<path>"}, false)
	var ue *usageError
	if errors.As(err, &ue) && strings.HasSuffix(ue.msg, "missing <path>") { // the flags are parsed: the path is optional
		pos, err = []string{"/"}, nil
	}
	if err != nil {
		return err
	}
	path := pos[0]
	if err := readPath(topic, path); err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	kids, st, err := c.Children(ctx, path)
	if err != nil {
		return readFailed(ctx, path, err)
	}
	nodes := []treeNode{}
	w := walker{c: c, a: a, quiet: true}
	err = w.walk(ctx, path, kids, st, func(p string, kids []string, st *framework.Stat, denied bool) error {
		s := newStatJSON(p, st)
		n := treeNode{Path: p, NumChildren: s.NumChildren, DataLength: s.DataLength,
			EphemeralOwner: s.EphemeralOwner, Mode: s.Mode, Recipe: w.role(ctx, p, kids, st)}
		if denied {
			n.Error = "no permission to read it"
		}
		if *asJSON {
			nodes = append(nodes, n)
			return nil
		}
		name := framework.NodeName(p)
		if p == path {
			name = p
		}
		fmt.Fprintf(a.stdout, "%s%s%s\n", strings.Repeat("  ", depth(p)-depth(path)), name, n.describe())
		return nil
	})
	if err != nil {
		return err
	}
	if *asJSON {
		if err := a.printJSON(nodes); err != nil {
			return err
		}
	}
	return w.status()
}

// depth is the number of components of path: 0 for the root.
func depth(path string) int {
	if path == "/" {
		return 0
	}
	return strings.Count(path, "/")
}

// treeNode is one node as tree --json prints it.
type treeNode struct {
	Path           string `json:"path"`
	NumChildren    int32  `json:"numChildren"`
	DataLength     int32  `json:"dataLength"`
	EphemeralOwner string `json:"ephemeralOwner"` // the owner session's id, hex: 0x0 for none
	Mode           string `json:"mode"`
	Recipe         string `json:"recipe,omitempty"` // the recipe node or path zkcurator recognises it as
	Error          string `json:"error,omitempty"`
}

// describe is the text tree prints after the node's name.
func (n treeNode) describe() string {
	var facts []string
	switch n.NumChildren {
	case 0:
	case 1:
		facts = append(facts, "1 child")
	default:
		facts = append(facts, fmt.Sprintf("%d children", n.NumChildren))
	}
	switch n.DataLength {
	case 0:
	case 1:
		facts = append(facts, "1 byte")
	default:
		facts = append(facts, fmt.Sprintf("%d bytes", n.DataLength))
	}
	if n.Mode == "ephemeral" {
		facts = append(facts, "ephemeral, session "+n.EphemeralOwner)
	}
	if n.Error != "" {
		facts = append(facts, n.Error)
	}
	s := ""
	if len(facts) > 0 {
		s = "  (" + strings.Join(facts, ", ") + ")"
	}
	if n.Recipe != "" {
		s += "  " + n.Recipe
	}
	return s
}

// statJSON is a node's Stat as stat --json prints it: zookeeper.jute's names; zxids
// and the owner session in hex (as strings: they exceed what a JSON number holds exactly
// in most readers), times in milliseconds since the epoch.
type statJSON struct {
	Path           string `json:"path"`
	Czxid          string `json:"czxid"`
	Mzxid          string `json:"mzxid"`
	Pzxid          string `json:"pzxid"`
	Ctime          int64  `json:"ctime"`
	Mtime          int64  `json:"mtime"`
	Version        int32  `json:"version"`
	Cversion       int32  `json:"cversion"`
	Aversion       int32  `json:"aversion"`
	EphemeralOwner string `json:"ephemeralOwner"`
	DataLength     int32  `json:"dataLength"`
	NumChildren    int32  `json:"numChildren"`
	Mode           string `json:"mode"` // ephemeral or persistent (containers and TTL nodes read as persistent)
}

func newStatJSON(path string, st *framework.Stat) statJSON {
	return statJSON{Path: path, Czxid: hex(st.Czxid), Mzxid: hex(st.Mzxid), Pzxid: hex(st.Pzxid),
		Ctime: st.Ctime, Mtime: st.Mtime, Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion,
		EphemeralOwner: hex(st.EphemeralOwner), DataLength: st.DataLength, NumChildren: st.NumChildren,
		Mode: nodeMode(st.EphemeralOwner)}
}

func hex(n int64) string { return "0x" + strconv.FormatUint(uint64(n), 16) }

// nodeMode says what kind of node an ephemeralOwner makes it: ephemeral (owned by that
// session) or persistent. ZooKeeper reports an owner of 0 for containers and TTL nodes
// too (DataNode.copyStat), so they read as persistent.
func nodeMode(owner int64) string {
	if owner == 0 {
		return "persistent"
	}
	return "ephemeral"
}

func formatMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// parentOf returns the parent of a path ("/" for the root's children and the root).
func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// printJSON prints v as indented JSON.
func (a *app) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s\n", b)
	return nil
}

// walker visits a subtree depth first, children in name order. A node that goes while
// it walks is left out; one it may not read is visited without children (and stat, when
// even that fails) and makes status report exitNoAuth at the end.
type walker struct {
	c      *framework.Client
	a      *app
	quiet  bool // tree says it in its listing: no warning on stderr
	denied int  // nodes whose children could not be listed for want of permission

	semaphores map[string]bool // whether a path is a semaphore, as role found it
}

// walk calls visit for path (whose children are kids, its stat st) and for every node
// below it; denied says that the node's children could not be listed for want of
// permission (kids is then nil).
func (w *walker) walk(ctx context.Context, path string, kids []string, st *framework.Stat, visit func(p string, kids []string, st *framework.Stat, denied bool) error) error {
	return w.visit(ctx, path, kids, st, false, visit)
}

func (w *walker) visit(ctx context.Context, path string, kids []string, st *framework.Stat, denied bool, visit func(string, []string, *framework.Stat, bool) error) error {
	if st == nil {
		return nil // gone meanwhile
	}
	if err := visit(path, kids, st, denied); err != nil {
		return err
	}
	orderChildren(framework.NodeName(path), kids)
	for _, k := range kids {
		p := framework.JoinPath(path, k)
		kkids, kst, err := w.c.Children(ctx, p)
		kdenied := errors.Is(err, framework.ErrNoAuth)
		switch {
		case errors.Is(err, framework.ErrNoNode):
			continue
		case kdenied:
			w.denied++
			if !w.quiet {
				fmt.Fprintf(w.a.stderr, "zkcurator: %s: no permission to list its children\n", p)
			}
			// exists needs no permission: the node is shown, without its children.
			if kst, err = w.c.Exists(ctx, p); err != nil {
				return readFailed(ctx, p, err)
			}
			kkids = nil
		case err != nil:
			return readFailed(ctx, p, err)
		}
		if err := w.visit(ctx, p, kkids, kst, kdenied, visit); err != nil {
			return err
		}
	}
	return nil
}

// status is the walk's outcome: exitNoAuth when a node could not be listed.
func (w *walker) status() error {
	if w.denied == 0 {
		return nil
	}
	nodes := "nodes"
	if w.denied == 1 {
		nodes = "node"
	}
	return exitWith(exitNoAuth, "%d %s could not be listed: no permission (zkcurator sends no credentials)", w.denied, nodes)
}

// maxRoleData bounds the data tree reads to recognise a service instance by its JSON.
const maxRoleData = 64 << 10

// role says what recipe's node or path p is: by its name and its parent's, by its
// children's names, or (a leaf holding a JSON object) by its data.
func (w *walker) role(ctx context.Context, p string, kids []string, st *framework.Stat) string {
	if p == "/" {
		return ""
	}
	if r := roleOf(p, nil, w.semaphoreAt(ctx)); r != "" {
		return r
	}
	if k, err := pathKind(ctx, w.c, p, kids); err == nil && k != notARecipe {
		return k.String()
	}
	if st == nil || st.NumChildren > 0 || st.DataLength < 2 || st.DataLength > maxRoleData {
		return ""
	}
	data, _, err := w.c.GetData(ctx, p)
	if err != nil {
		return "" // gone, or not ours to read: no role said
	}
	return roleOf(p, data, w.semaphoreAt(ctx))
}

// semaphoreAt returns isSemaphorePath, remembered for each path it is asked about: the
// walk asks it for every lease and lock node of a semaphore.
func (w *walker) semaphoreAt(ctx context.Context) func(string) bool {
	return func(p string) bool {
		if is, ok := w.semaphores[p]; ok {
			return is
		}
		if w.semaphores == nil {
			w.semaphores = map[string]bool{}
		}
		w.semaphores[p] = isSemaphorePath(ctx, w.c, p)
		return w.semaphores[p]
	}
}
