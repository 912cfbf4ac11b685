// Command zkcurator runs Apache Curator's ZooKeeper recipes from a shell, for batch jobs
// and operators: a command under a distributed lock (like flock(1), but across machines)
// or a semaphore, or only while it leads an election (Curator's LeaderSelector); barriers
// that hold and release jobs; queues, service discovery, counters; a look at who holds a
// lock or leads, and a read-only look at any path (ls, get, stat, tree, which names the
// recipe nodes it knows). What it makes is wire-compatible with Curator's recipes and
// with this module's Go packages on the same paths. It asks for the library's default
// session timeout unless --session-timeout says otherwise. For development, zkcurator
// server runs a ZooKeeper on this machine until Ctrl-C.
//
//	zkcurator server --data ~/zk-dev      # a ZooKeeper on 127.0.0.1:2181 until Ctrl-C
//	zkcurator tree /locks
//	zkcurator lock run /locks/nightly-report -- ./report.sh
//	zkcurator lock run /locks/db-migrate --timeout 30s -- make migrate
//	zkcurator lock holders /locks/nightly-report
//	zkcurator leader run /leaders/scheduler -- ./scheduler.sh
//	zkcurator leader who /leaders/scheduler
//	zkcurator semaphore run /sem/api --leases 3 -- ./call-api.sh
//	zkcurator barrier set /jobs/nightly/start
//	zkcurator doublebarrier run /jobs/nightly/workers --members 4 -- ./part.sh
//	zkcurator group join /groups/indexers worker-7 -- ./index.sh
//	zkcurator group members /groups/indexers
//	zkcurator discovery register orders --address 10.0.0.7 --port 8080 -- ./serve.sh
//	zkcurator discovery get orders
//	zkcurator counter add /counters/jobs-done 1
//	zkcurator sharedcount set /config/workers 8
//	zkcurator queue put /queues/jobs '{"id": 7}' --kind simple
//
// Run `zkcurator help` for the commands, flags, environment and exit statuses.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/zoocurator/zoocurator/framework"
)

// Exit statuses. A command run under a lock, lease or barrier passes its own status
// through (128+N when a signal N killed it, as shells report it).
const (
	exitError       = 1   // an error: ZooKeeper unreachable, a failed request, ...
	exitUsage       = 2   // a bad command line
	exitConflict    = 3   // a conditional write found another value or version: nothing written
	exitNoNode      = 4   // ls, get, stat, tree: the path does not exist
	exitNoAuth      = 5   // ls, get, tree: no permission to read the path (or, tree and ls -R, a node below it)
	exitLost        = 70  // the lock or lease was lost or revoked while the command ran; it was stopped
	exitTimeout     = 75  // --timeout expired first (EX_TEMPFAIL; what `flock -E 75 -w` would say)
	exitInterrupted = 130 // interrupted (SIGINT, SIGTERM or SIGHUP) while waiting
	exitCannotExec  = 126 // the command could not be executed
	exitNotFound    = 127 // the command was not found
)

// statusError ends zkcurator with status code; msg, if any, goes to stderr first.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// exitWith returns a statusError with a formatted message.
func exitWith(code int, format string, args ...any) error {
	return &statusError{code: code, msg: fmt.Sprintf(format, args...)}
}

// usageError is a bad command line: its message goes to stderr with a pointer to the
// help of topic, and the status is 2.
type usageError struct {
	topic string
	msg   string
}

func (e *usageError) Error() string { return e.msg }

func usagef(topic, format string, args ...any) error {
	return &usageError{topic: topic, msg: fmt.Sprintf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// app is one invocation: its global settings and standard streams.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	connect        string
	sessionTimeout optDuration // unset: the library's default
	connectTimeout time.Duration
	namespace      string
	tls            tlsFiles // --tls-ca, --tls-cert, --tls-key (default $ZK_TLS_*)

	force bool // --force of counter set and sharedcount set: overwrite data of another format
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	connect := os.Getenv("ZK_CONNECT")
	if connect == "" {
		connect = "127.0.0.1:2181"
	}
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, connect: connect, connectTimeout: 15 * time.Second,
		tls: tlsFilesFromEnv()}
	err := a.dispatch(ctx, args)
	var se *statusError
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelpShown):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "zkcurator: %s\n", ue.msg)
		hint := "zkcurator help"
		if ue.topic != "" {
			hint += " " + ue.topic
		}
		fmt.Fprintf(stderr, "Run '%s' for usage.\n", hint)
		return exitUsage
	case errors.As(err, &se):
		if se.msg != "" {
			fmt.Fprintf(stderr, "zkcurator: %s\n", se.msg)
		}
		return se.code
	default:
		fmt.Fprintf(stderr, "zkcurator: %v\n", err)
		return exitError
	}
}

// errHelpShown says help was asked for and printed.
var errHelpShown = errors.New("help shown")

// dispatch parses the global flags and runs the command they are followed by.
func (a *app) dispatch(ctx context.Context, args []string) error {
	fs := a.newFlagSet("")
	if err := fs.Parse(args); err != nil {
		return a.flagError("", err)
	}
	args = fs.Args()
	if len(args) == 0 {
		return usagef("", "no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "help":
		return a.help(rest)
	case "server":
		return a.server(ctx, rest)
	case "ls":
		return a.ls(ctx, rest)
	case "get":
		return a.get(ctx, rest)
	case "stat":
		return a.stat(ctx, rest)
	case "tree":
		return a.tree(ctx, rest)
	case "lock":
		return a.sub(ctx, "lock", rest, map[string]func(context.Context, []string) error{
			"run": a.lockRun, "holders": a.lockHolders, "revoke": a.lockRevoke,
		})
	case "participants": // the name for `lock holders`
		return a.lockHolders(ctx, rest)
	case "revoke":
		return a.lockRevoke(ctx, rest)
	case "leader":
		return a.sub(ctx, "leader", rest, map[string]func(context.Context, []string) error{
			"run": a.leaderRun, "who": a.leaderWho,
		})
	case "semaphore":
		return a.sub(ctx, "semaphore", rest, map[string]func(context.Context, []string) error{
			"run": a.semaphoreRun, "holders": a.semaphoreHolders,
		})
	case "barrier":
		return a.sub(ctx, "barrier", rest, map[string]func(context.Context, []string) error{
			"set": a.barrierSet, "remove": a.barrierRemove, "wait": a.barrierWait,
		})
	case "doublebarrier":
		return a.sub(ctx, "doublebarrier", rest, map[string]func(context.Context, []string) error{
			"run": a.doubleBarrierRun,
		})
	case "group":
		return a.sub(ctx, "group", rest, map[string]func(context.Context, []string) error{
			"members": a.groupMembers, "join": a.groupJoin,
		})
	case "discovery":
		return a.sub(ctx, "discovery", rest, map[string]func(context.Context, []string) error{
			"register": a.discoveryRegister, "list": a.discoveryList, "get": a.discoveryGet,
		})
	case "counter":
		return a.sub(ctx, "counter", rest, map[string]func(context.Context, []string) error{
			"get": a.counterGet, "add": a.counterAdd, "set": a.counterSet,
		})
	case "sharedcount":
		return a.sub(ctx, "sharedcount", rest, map[string]func(context.Context, []string) error{
			"get": a.sharedCountGet, "set": a.sharedCountSet,
		})
	case "queue":
		return a.sub(ctx, "queue", rest, map[string]func(context.Context, []string) error{
			"put": a.queuePut, "take": a.queueTake, "list": a.queueList,
		})
	}
	return usagef("", "unknown command %q", cmd)
}

// sub runs the subcommand of group named by args[0].
func (a *app) sub(ctx context.Context, group string, args []string, cmds map[string]func(context.Context, []string) error) error {
	if len(args) == 0 {
		return usagef(group, "%s: missing subcommand", group)
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		return a.help([]string{group})
	}
	fn, ok := cmds[args[0]]
	if !ok {
		return usagef(group, "%s: unknown subcommand %q", group, args[0])
	}
	return fn(ctx, args[1:])
}

// newFlagSet returns a flag set for the command topic ("" for the global flags alone,
// "lock run", ...) with the global flags on it, so that they may also follow the command.
// It prints nothing itself.
func (a *app) newFlagSet(topic string) *flag.FlagSet {
	fs := flag.NewFlagSet("zkcurator "+topic, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Parse's error says it all; flagError reports it
	fs.Usage = func() {}
	// Defaults are the current values, so that a flag given before the command stays.
	fs.StringVar(&a.connect, "connect", a.connect, "ZooKeeper connect string `host:port[,host:port...][/chroot]` (default $ZK_CONNECT, else 127.0.0.1:2181)")
	fs.Var(&a.sessionTimeout, "session-timeout", "ZooKeeper session timeout (default: the library's, framework.WithSessionTimeout)")
	fs.DurationVar(&a.connectTimeout, "connect-timeout", a.connectTimeout, "give up connecting to ZooKeeper after this long")
	fs.StringVar(&a.namespace, "namespace", a.namespace, "prefix every path with /`ns` (Curator's namespace)")
	a.tls.addFlags(fs)
	return fs
}

// flagError turns an error of fs.Parse into help or a usage error.
func (a *app) flagError(topic string, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return a.help(strings.Fields(topic))
	}
	if topic == "" {
		return &usageError{msg: err.Error()}
	}
	return &usageError{topic: topic, msg: topic + ": " + err.Error()}
}

// parseArgs parses fs's flags from args, where they may come before, between and after
// the positional arguments, one per name in names. With wantCmd, the command to run
// follows "--", or starts at the first argument after the positional ones that is not a
// flag. It returns the positional arguments (one per name) and the command.
func (a *app) parseArgs(fs *flag.FlagSet, topic string, args []string, names []string, wantCmd bool) (pos, cmd []string, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, a.flagError(topic, err)
		}
		rest := fs.Args()
		dashdash := len(rest) < len(args) && args[len(args)-len(rest)-1] == "--"
		if !dashdash && len(rest) > 0 && len(pos) < len(names) {
			pos = append(pos, rest[0])
			args = rest[1:]
			continue
		}
		if !wantCmd && dashdash { // "barrier set -- /path": what follows is positional
			for len(pos) < len(names) && len(rest) > 0 {
				pos, rest = append(pos, rest[0]), rest[1:]
			}
		}
		if len(pos) < len(names) {
			return nil, nil, usagef(topic, "%s: missing %s", topic, names[len(pos)])
		}
		if wantCmd {
			if len(rest) == 0 {
				return nil, nil, usagef(topic, "%s: missing the command to run (after --)", topic)
			}
			return pos, rest, nil
		}
		if len(rest) > 0 {
			return nil, nil, usagef(topic, "%s: unexpected arguments %q", topic, rest)
		}
		return pos, nil, nil
	}
}

// client connects to ZooKeeper with the global settings.
func (a *app) client(ctx context.Context) (*framework.Client, error) {
	if (a.sessionTimeout.set && a.sessionTimeout.d <= 0) || a.connectTimeout <= 0 {
		return nil, usagef("", "--session-timeout and --connect-timeout must be positive")
	}
	opts := []framework.Option{framework.WithConnectionTimeout(a.connectTimeout)}
	if a.sessionTimeout.set { // else the library's default, which zkcurator does not repeat
		opts = append(opts, framework.WithSessionTimeout(a.sessionTimeout.d))
	}
	if a.namespace != "" {
		opts = append(opts, framework.WithNamespace(strings.Trim(a.namespace, "/")))
	}
	if cfg, err := a.tls.config(); err != nil {
		return nil, err
	} else if cfg != nil {
		opts = append(opts, framework.WithTLS(cfg))
	}
	if _, err := framework.New(a.connect, opts...); err != nil { // bad arguments, without dialling
		return nil, usagef("", "%v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, a.connectTimeout)
	defer cancel()
	c, err := framework.Connect(cctx, a.connect, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, exitWith(exitInterrupted, "interrupted while connecting to ZooKeeper")
		}
		return nil, exitWith(exitError, "cannot connect to ZooKeeper at %s within %v (--connect, $ZK_CONNECT): %v",
			a.connect, a.connectTimeout, err)
	}
	return c, nil
}

// optDuration is a duration flag that remembers whether it was given.
type optDuration struct {
	d   time.Duration
	set bool
}

func (o *optDuration) String() string {
	if o == nil || !o.set {
		return ""
	}
	return o.d.String()
}

func (o *optDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("parse error")
	}
	o.d, o.set = d, true
	return nil
}

// checkPath validates a recipe path given on the command line.
func checkPath(topic, what, p string) error {
	if err := framework.ValidatePath(p); err != nil {
		return usagef(topic, "%s: bad %s: %v", topic, what, err)
	}
	if p == "/" || framework.IsReservedPath(p) {
		return usagef(topic, "%s: bad %s %q: the root and /zookeeper cannot be used", topic, what, p)
	}
	return nil
}

// withTimeout returns ctx limited to d, or ctx itself when d is 0 (no limit).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// waitFailed turns the error of a wait (for a lock, a lease, a barrier) into the exit
// status a script can act on.
func waitFailed(ctx context.Context, what string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return exitWith(exitTimeout, "timed out after %v waiting for %s", timeout, what)
	case ctx.Err() != nil:
		return exitWith(exitInterrupted, "interrupted while waiting for %s", what)
	}
	return exitWith(exitError, "waiting for %s: %v", what, err)
}

// checkDurations refuses negative durations.
// holdFlags are the flags of every command that runs a command while it holds something
// (lock run, semaphore run, leader run).
type holdFlags struct {
	timeout, grace        *time.Duration
	revocable, foreground *bool
}

// addHoldFlags defines them on fs; lost says what ends the holding ("the lock is lost").
func addHoldFlags(fs *flag.FlagSet, lost string) holdFlags {
	return holdFlags{
		timeout:    fs.Duration("timeout", 0, "give up waiting after this long (exit 75); 0 waits"),
		grace:      fs.Duration("grace", 10*time.Second, "SIGTERM to SIGKILL when "+lost),
		revocable:  fs.Bool("revocable", false, "stop the command and let go when revoked"),
		foreground: fs.Bool("foreground", false, "run the command in zkcurator's process group"),
	}
}

// check refuses negative durations.
func (h holdFlags) check(topic string) error {
	return checkDurations(topic, map[string]time.Duration{"timeout": *h.timeout, "grace": *h.grace})
}

func checkDurations(topic string, ds map[string]time.Duration) error {
	for name, d := range ds {
		if d < 0 {
			return usagef(topic, "%s: --%s must not be negative", topic, name)
		}
	}
	return nil
}

// nodeData is what zkcurator writes into its lock and lease nodes, so that `lock holders`
// can say who holds: host:pid.
func nodeData() []byte {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Appendf(nil, "%s:%d", host, os.Getpid())
}
