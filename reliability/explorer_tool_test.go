package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/recipes/mutex"
)

// The zkcurator tool under the process's moves. Its operations run the tool (built once)
// with a command, a shell that forks a child, and the moves signal the tool. The tool's
// requests are not the victim's: k counts the moments the operation marks instead (the
// tool waiting, its command running).
//
// Checks: the tool exits within its grace plus xPrompt of a signal (promptness); once it
// has exited, no process of its command is left (cleanliness); and it never runs its
// command beside another holder (exclusion).

// xToolGrace is the tool's grace (its default, --grace): how long it may wait to leave,
// or for its command, once interrupted.
const xToolGrace = 10 * time.Second

// The tool, built once for the package's tests.
var xtool struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func zkcuratorBinary() (string, error) {
	xtool.once.Do(func() {
		xtool.dir, xtool.err = os.MkdirTemp("", "explorer-zkcurator-")
		if xtool.err != nil {
			return
		}
		xtool.path = filepath.Join(xtool.dir, "zkcurator")
		out, err := exec.Command("go", "build", "-o", xtool.path, "../cmd/zkcurator").CombinedOutput()
		if err != nil {
			xtool.err = fmt.Errorf("build zkcurator: %v: %s", err, out)
		}
	})
	return xtool.path, xtool.err
}

// removeZkcuratorBinary removes what zkcuratorBinary built (TestMain calls it).
func removeZkcuratorBinary() {
	if xtool.dir != "" {
		_ = os.RemoveAll(xtool.dir)
	}
}

// xtoolRun is one run of the tool.
type xtoolRun struct {
	cmd    *exec.Cmd
	out    strings.Builder
	exited chan struct{}
	err    error // its exit, once exited is closed
	at     time.Time
	dir    string // its command's files: pid (the shell's pid), after (the shell's last step)
}

// startTool runs the tool in a process group of its own (as a shell runs a job) with args,
// then -- and a shell that writes its pid, forks a sleep of secs seconds and then writes
// the file "after".
func startTool(r *xrun, secs int, args ...string) (*xtoolRun, error) {
	bin, err := zkcuratorBinary()
	if err != nil {
		return nil, err
	}
	tr := &xtoolRun{exited: make(chan struct{}), dir: r.t.TempDir()}
	script := fmt.Sprintf(`exec >/dev/null 2>&1; echo $$ > %[1]s/pid.tmp && mv %[1]s/pid.tmp %[1]s/pid; sleep %[2]d; touch %[1]s/after`, tr.dir, secs)
	argv := append([]string{"--connect", ens.Addr(r.w.member), "--session-timeout", otherSession.String()}, args...)
	argv = append(argv, "--", "sh", "-c", script)
	tr.cmd = exec.Command(bin, argv...)
	tr.cmd.Stdout, tr.cmd.Stderr = &tr.out, &tr.out
	tr.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := tr.cmd.Start(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.tool = tr
	r.mu.Unlock()
	go func() {
		tr.err = tr.cmd.Wait()
		tr.at = time.Now()
		close(tr.exited)
	}()
	return tr, nil
}

// wait waits for the tool to exit (ctx: it is killed, with its command's group).
func (tr *xtoolRun) wait(ctx context.Context) error {
	select {
	case <-tr.exited:
		return tr.err
	case <-ctx.Done():
		tr.killAll()
		<-tr.exited
		return fmt.Errorf("zkcurator did not exit: %w (%s)", ctx.Err(), strings.TrimSpace(tr.out.String()))
	}
}

// commandPID returns the pid of the tool's command (0: not started).
func (tr *xtoolRun) commandPID() int {
	b, err := os.ReadFile(filepath.Join(tr.dir, "pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// commandFinished reports whether the command ran to its last step.
func (tr *xtoolRun) commandFinished() bool {
	_, err := os.Stat(filepath.Join(tr.dir, "after"))
	return err == nil
}

// commandStarted reports whether the command runs (or ran).
func (tr *xtoolRun) commandStarted() bool { return tr.commandPID() != 0 }

// killAll kills the tool's and its command's process groups.
func (tr *xtoolRun) killAll() {
	_ = syscall.Kill(-tr.cmd.Process.Pid, syscall.SIGKILL)
	if pid := tr.commandPID(); pid != 0 {
		if g := processGroup(pid); g > 0 {
			_ = syscall.Kill(-g, syscall.SIGKILL)
		}
	}
}

// processGroup returns the process group of pid (0: gone).
func processGroup(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 3 {
		return 0
	}
	g, _ := strconv.Atoi(f[2])
	return g
}

// groupMembers lists the live processes of process group g (zombies aside).
func groupMembers(g int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if pg, _ := strconv.Atoi(f[2]); pg == g {
			pid, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(s, "/proc/"), "/")[0])
			out = append(out, pid)
		}
	}
	return out
}

// signalTool sends sig to the tool (the process moves).
func (r *xrun) signalTool(sig syscall.Signal) {
	r.mu.Lock()
	tr := r.tool
	r.mu.Unlock()
	if tr == nil {
		r.noTarget.Store(true)
		return
	}
	_ = tr.cmd.Process.Signal(sig)
}

// checkTool checks the tool's run once it exited: promptly after a signal, and with no
// process of its command left.
func checkTool(r *xrun, tr *xtoolRun, cmdGroup int) []string {
	var out []string
	r.mu.Lock()
	moved := r.movedAt
	r.mu.Unlock()
	select {
	case <-tr.exited:
		if r.move.process && !moved.IsZero() && tr.at.Sub(moved) > xToolGrace+xPrompt {
			out = append(out, fmt.Sprintf("promptness: zkcurator exited %v after %s, its grace is %v", tr.at.Sub(moved).Round(time.Millisecond), r.move.name, xToolGrace))
		}
	default:
	}
	if cmdGroup > 0 {
		var left []int
		if !waitFor(r.bg, xPrompt, func() bool { left = groupMembers(cmdGroup); return len(left) == 0 }) {
			out = append(out, fmt.Sprintf("cleanliness: processes of zkcurator's command left %v after it exited: %v", xPrompt, left))
			_ = syscall.Kill(-cmdGroup, syscall.SIGKILL)
		}
	}
	return out
}

// toolLockOp: `zkcurator lock run` waits behind another client's lock, then runs its
// command. Marks: the tool waits (its node is queued), the command runs.
func toolLockOp() xop {
	return xop{name: "zkcurator-lock-run", tool: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/lock"
		m, err := mutex.New(r.w.adv, path)
		if err != nil {
			return nil, err
		}
		held, err := m.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		r.recordAdv(held.Node(), mustStat(ctx, r, held.Node()))
		var tr *xtoolRun
		cmdGroup := 0
		return &xround{
			call: func(ctx context.Context) error {
				var err error
				// The command outlives xPrompt: a process of it left once the tool is
				// gone is seen.
				if tr, err = startTool(r, int((xPrompt+3*time.Second)/time.Second), "lock", "run", path); err != nil {
					return err
				}
				queued := waitFor(ctx, 30*time.Second, func() bool {
					kids, _, err := r.w.adv.Children(ctx, path)
					return err == nil && len(kids) > 1 || isClosedCh(tr.exited)
				})
				if queued && !isClosedCh(tr.exited) {
					r.hook("the tool waits")
				}
				r.forgetAdv(held.Node())
				_ = held.Release(r.bg)
				if waitFor(ctx, 30*time.Second, func() bool { return tr.commandStarted() || isClosedCh(tr.exited) }) && tr.commandStarted() {
					cmdGroup = processGroup(tr.commandPID())
					r.hook("the command runs")
				}
				return tr.wait(ctx)
			},
			after: func(ctx context.Context, err error) []string {
				if tr == nil {
					return nil
				}
				return checkTool(r, tr, cmdGroup)
			},
		}, nil
	}}
}

// toolLockOnLatchOp: `zkcurator lock run` on a path where a leader latch of another
// client leads: the tool must not run its command beside the leader (it refuses, or
// waits).
func toolLockOnLatchOp() xop {
	return xop{name: "zkcurator-lock-run-on-latch", tool: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/latch"
		l, err := leader.NewLatch(r.w.adv, path, "other")
		if err != nil {
			return nil, err
		}
		if err := l.Start(ctx); err != nil {
			return nil, err
		}
		if err := l.Await(ctx); err != nil {
			_ = l.Close()
			return nil, err
		}
		if st, err := r.w.adv.Exists(ctx, path); err == nil && st != nil {
			r.recordAdv(path, st)
		}
		var tr *xtoolRun
		cmdGroup := 0
		return &xround{
			call: func(ctx context.Context) error {
				var err error
				if tr, err = startTool(r, 1, "lock", "run", path, "--timeout", "3s"); err != nil {
					return err
				}
				if waitFor(ctx, 30*time.Second, func() bool { return tr.commandStarted() || isClosedCh(tr.exited) }) && tr.commandStarted() {
					cmdGroup = processGroup(tr.commandPID())
					r.hook("the command runs")
				}
				return tr.wait(ctx)
			},
			after: func(ctx context.Context, err error) []string {
				if tr == nil {
					return nil
				}
				out := checkTool(r, tr, cmdGroup)
				if tr.commandStarted() && l.HasLeadership() {
					out = append(out, "exclusion: zkcurator lock run ran its command on a path where another client's leader latch leads")
				}
				return out
			},
			close: func() error { return l.Close() },
		}, nil
	}}
}

// toolDoubleBarrierOp: `zkcurator doublebarrier run --members 2` with a member of another
// client: both enter, the tool's command runs, and the other member leaves once the
// command has finished or the tool is out (or 30 s on). Marks: the command runs.
func toolDoubleBarrierOp() xop {
	return xop{name: "zkcurator-doublebarrier-run", tool: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		path := r.w.base + "/dbarrier"
		peer, err := doublebarrier.New(r.w.adv, path, 2)
		if err != nil {
			return nil, err
		}
		var tr *xtoolRun
		cmdGroup := 0
		peerDone := make(chan error, 1)
		return &xround{
			call: func(ctx context.Context) error {
				var err error
				if tr, err = startTool(r, 2, "doublebarrier", "run", path, "--members", "2"); err != nil {
					return err
				}
				go func() {
					pctx, cancel := context.WithTimeout(r.bg, 60*time.Second)
					defer cancel()
					if err := peer.Enter(pctx); err != nil {
						peerDone <- err
						return
					}
					// The peer leaves once the tool's command has finished or the tool
					// is out (or 30 s on, as a member whose own work ran long).
					waitFor(pctx, 30*time.Second, func() bool { return tr.commandFinished() || isClosedCh(tr.exited) })
					peerDone <- peer.Leave(pctx)
				}()
				if waitFor(ctx, 30*time.Second, func() bool { return tr.commandStarted() || isClosedCh(tr.exited) }) && tr.commandStarted() {
					cmdGroup = processGroup(tr.commandPID())
					r.hook("the command runs")
				}
				return tr.wait(ctx)
			},
			after: func(ctx context.Context, err error) []string {
				if tr == nil {
					return nil
				}
				out := checkTool(r, tr, cmdGroup)
				if perr := <-peerDone; perr != nil && !errors.Is(perr, context.DeadlineExceeded) {
					r.t.Logf("the peer member: %v", perr)
				}
				return out
			},
		}, nil
	}}
}

var xtoolOps = []xop{toolLockOp(), toolLockOnLatchOp(), toolDoubleBarrierOp()}

// xtoolMoves signal the tool as a user or a supervisor does.
var xtoolMoves = []xmove{
	{name: "sigterm", process: true, apply: func(r *xrun) { r.signalTool(syscall.SIGTERM) }},
	{name: "sigint", process: true, apply: func(r *xrun) { r.signalTool(syscall.SIGINT) }},
	{name: "sigkill", process: true, apply: func(r *xrun) { r.signalTool(syscall.SIGKILL) }},
}
