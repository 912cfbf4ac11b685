package curatortest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// BenchWorkloads are the workloads of zkbench (shared/bench/WORKLOADS.md) that
// java/CuratorBench.java runs on Curator 5.4.
var BenchWorkloads = []string{"counter-inc", "doublebarrier", "multilock", "mutex", "rwmixed", "rwread", "semaphore", "semmutex",
	"queue-put", "queue-take"}

// BenchConfig is one run of a workload on Curator.
type BenchConfig struct {
	Connect        string        // ZooKeeper connect string
	SessionTimeout time.Duration // of every session
	Workload       string        // one of BenchWorkloads
	Clients        int           // sessions, one CuratorFramework each
	PerClient      int           // worker threads per session
	OpsPerWorker   int           // ops each worker runs
	Base           string        // the run's base path (WORKLOADS.md)
	// WarmupOpsPerWorker ops of each worker run on WarmupBase before the Bench is ready,
	// unreported, so that the JIT has compiled what the run takes (0: none).
	WarmupOpsPerWorker int
	WarmupBase         string
}

// Bench is one JVM running one workload on Curator (java/CuratorBench.java). StartBench
// returns it with its sessions connected and its workers at the start line; Run starts
// them and returns the JSON line, and Close ends the sessions. Between Run and Close the
// sessions stay open and idle, so that the caller can read the server's counters.
// A Bench is used by one goroutine.
type Bench struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string   // stdout lines
	exited chan struct{} // closed when the JVM has exited and its output is read
	err    error         // the JVM's exit status; set before exited is closed
	stderr *tail

	closeOnce sync.Once
}

// StartBench compiles java/CuratorBench.java (once per process), starts it and waits until
// its sessions are connected, its warm-up is done and its workers wait at the start line,
// or ctx ends. An error matching ErrUnavailable says Java or Curator is not installed.
func StartBench(ctx context.Context, cfg BenchConfig) (*Bench, error) {
	if !slices.Contains(BenchWorkloads, cfg.Workload) {
		return nil, fmt.Errorf("%w: unknown workload %q (known: %s)", ErrBenchFailed, cfg.Workload, strings.Join(BenchWorkloads, ", "))
	}
	if cfg.Clients < 1 || cfg.PerClient < 1 || cfg.OpsPerWorker < 1 || cfg.WarmupOpsPerWorker < 0 ||
		cfg.SessionTimeout <= 0 || cfg.Base == "" || (cfg.WarmupOpsPerWorker > 0 && cfg.WarmupBase == "") {
		return nil, fmt.Errorf("%w: bad configuration %+v", ErrBenchFailed, cfg)
	}
	tc, err := findToolchain()
	if err != nil {
		return nil, err
	}
	dir, err := benchProgram.compiled(tc)
	if err != nil {
		return nil, err
	}
	args := []string{"-Xmx256m", "-Xss512k", "-Djava.io.tmpdir=" + os.TempDir(),
		"-cp", strings.Join(append([]string{dir}, tc.classpath...), string(os.PathListSeparator)),
		benchProgram.mainClass, cfg.Connect, strconv.FormatInt(cfg.SessionTimeout.Milliseconds(), 10),
		cfg.Workload, strconv.Itoa(cfg.Clients), strconv.Itoa(cfg.PerClient), strconv.Itoa(cfg.OpsPerWorker), cfg.Base}
	if cfg.WarmupOpsPerWorker > 0 {
		args = append(args, strconv.Itoa(cfg.WarmupOpsPerWorker), cfg.WarmupBase)
	}
	cmd := exec.Command(tc.java, args...)
	cmd.Dir = filepath.Clean(dir)
	cmd.SysProcAttr = sysProcAttr()
	b := &Bench{cmd: cmd, lines: make(chan string, 4), exited: make(chan struct{}), stderr: &tail{}}
	cmd.Stderr = b.stderr
	if b.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("curatortest: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("curatortest: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("curatortest: start %s: %w", tc.java, err)
	}
	go b.read(stdout)
	if _, err := b.next(ctx, "ready"); err != nil {
		b.kill()
		return nil, err
	}
	return b, nil
}

// read passes the JVM's stdout lines on, then reaps the process.
func (b *Bench) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		select {
		case b.lines <- sc.Text():
		default: // nobody reads more than the protocol's few lines; a surplus is dropped
		}
	}
	_, _ = io.Copy(io.Discard, r)
	b.err = b.cmd.Wait()
	close(b.exited)
}

// next waits for the next line of stdout; want is what the protocol expects there
// ("ready"; "" for the JSON line).
func (b *Bench) next(ctx context.Context, want string) (string, error) {
	var line string
	select {
	case line = <-b.lines:
	case <-b.exited:
		select {
		case line = <-b.lines:
		default:
			return "", fmt.Errorf("%w: the JVM exited (%v) waiting for %q:\n%s", ErrBenchFailed, b.err, want, b.stderr)
		}
	case <-ctx.Done():
		return "", fmt.Errorf("curatortest: curator bench waiting for %q: %w", want, ctx.Err())
	}
	if msg, ok := strings.CutPrefix(line, "err "); ok {
		return "", fmt.Errorf("%w: %s\n%s", ErrBenchFailed, msg, b.stderr)
	}
	if want != "" && line != want {
		return "", fmt.Errorf("%w: expected %q, got %q", ErrBenchFailed, want, line)
	}
	return line, nil
}

// Run starts the workers and returns the run's JSON line (WORKLOADS.md's fields, with
// "impl":"curator") when the last has finished, or an error when a worker failed or ctx
// ended (the JVM is then killed). Run may be called once.
func (b *Bench) Run(ctx context.Context) (string, error) {
	if _, err := io.WriteString(b.stdin, "go\n"); err != nil {
		b.kill()
		return "", fmt.Errorf("%w: %v:\n%s", ErrBenchFailed, err, b.stderr)
	}
	line, err := b.next(ctx, "")
	if err != nil {
		b.kill()
		return "", err
	}
	if !strings.HasPrefix(line, "{") {
		b.kill()
		return "", fmt.Errorf("%w: expected the JSON line, got %q", ErrBenchFailed, line)
	}
	return line, nil
}

// Close closes the Curator clients (their sessions end, their ephemeral nodes go) and
// waits for the JVM to exit, killing it if it has not within 10 s. It may be called more
// than once; it returns the JVM's exit status the first time.
func (b *Bench) Close() error {
	var err error
	b.closeOnce.Do(func() {
		_, _ = io.WriteString(b.stdin, "close\n")
		_ = b.stdin.Close() // the JVM reads end of input as close too
		t := time.NewTimer(closeTimeout)
		defer t.Stop()
		select {
		case <-b.exited:
		case <-t.C:
			b.kill()
		}
		if b.err != nil {
			err = fmt.Errorf("%w: %v:\n%s", ErrBenchFailed, b.err, b.stderr)
		}
	})
	return err
}

// kill ends the JVM with SIGKILL and waits for it to exit. Its sessions are not closed.
func (b *Bench) kill() {
	select {
	case <-b.exited:
		return
	default:
	}
	_ = b.cmd.Process.Kill()
	<-b.exited
}
