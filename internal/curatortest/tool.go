package curatortest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	startTimeout = 60 * time.Second // JVM start plus Curator's first connection
	closeTimeout = 10 * time.Second
	tailSize     = 64 << 10 // bytes of stderr and transcript kept for failure logs
)

// Option configures Start.
type Option func(*options)

type options struct {
	sessionTimeout time.Duration
	name           string
	program        *javaProgram // what to run: toolProgram unless set
}

// WithSessionTimeout sets the Curator client's session timeout. The default is 4 s.
// The server bounds it (the zktest servers accept 400 ms to 120 s).
func WithSessionTimeout(d time.Duration) Option {
	return func(o *options) { o.sessionTimeout = d }
}

// WithName names the tool in failure logs. The default is "curator".
func WithName(name string) Option {
	return func(o *options) { o.name = name }
}

// Tool is one JVM running one Curator client (one ZooKeeper session) that executes the
// commands listed in the package doc. Its methods are safe for concurrent use; commands
// are sent one at a time.
type Tool struct {
	name      string
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	sessionID string

	mu sync.Mutex // serialises commands: held from writing a command until it is queued

	qmu     sync.Mutex
	waiters []chan string // answers expected, in the order the commands were sent

	evMu    sync.Mutex
	events  []string      // event texts not yet taken, without "event "
	evWake  chan struct{} // closed and replaced when an event arrives
	exited  chan struct{} // closed when the JVM has exited and its output is read
	waitErr error         // the JVM's exit status; set before exited is closed

	stderr     *tail
	transcript *tail

	closeOnce sync.Once
}

// Start compiles the Java tool (once per process), starts it connected to connect (a
// ZooKeeper connect string), and waits until its Curator client is connected. The JVM
// is closed at the test's cleanup; when the test failed, its stderr and the commands it
// got are logged. When Java or Curator is missing, Start skips the test under
// go test -short and fails it otherwise.
func Start(t testing.TB, connect string, opts ...Option) *Tool {
	t.Helper()
	o := options{sessionTimeout: 4 * time.Second, name: "curator", program: toolProgram}
	for _, opt := range opts {
		opt(&o)
	}
	tc, err := findToolchain()
	if err != nil {
		if testing.Short() {
			t.Skipf("%v (skipped under -short)", err)
		}
		t.Fatalf("%v", err)
	}
	dir, err := o.program.compiled(tc)
	if err != nil {
		t.Fatalf("%v", err)
	}
	tool, err := start(tc, dir, connect, o)
	if tool != nil {
		t.Cleanup(func() {
			_ = tool.Close()
			if t.Failed() {
				tool.logTo(t)
			}
		})
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	return tool
}

func start(tc *toolchain, dir, connect string, o options) (*Tool, error) {
	cp := strings.Join(append([]string{dir}, tc.classpath...), string(os.PathListSeparator))
	cmd := exec.Command(tc.java,
		"-Xmx96m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		"-Djava.io.tmpdir="+os.TempDir(),
		"-cp", cp, o.program.mainClass, connect, strconv.FormatInt(o.sessionTimeout.Milliseconds(), 10))
	cmd.Dir = filepath.Clean(dir)
	cmd.SysProcAttr = sysProcAttr()
	tool := &Tool{
		name:       o.name,
		cmd:        cmd,
		evWake:     make(chan struct{}),
		exited:     make(chan struct{}),
		stderr:     &tail{},
		transcript: &tail{},
	}
	cmd.Stderr = tool.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("curatortest: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("curatortest: %w", err)
	}
	tool.stdin = stdin
	ready := make(chan string, 1)
	tool.waiters = []chan string{ready} // the first line is "ready <session>" or "err ..."
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("curatortest: start %s: %w", tc.java, err)
	}
	go tool.read(stdout)

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var line string
	select {
	case line = <-ready:
	case <-tool.exited:
		select {
		case line = <-ready:
		default:
			return tool, fmt.Errorf("curatortest: %s exited during start-up (%v):\n%s", tool.name, tool.waitErr, tool.stderr)
		}
	case <-timer.C:
		tool.Kill()
		return tool, fmt.Errorf("curatortest: %s not connected to %s after %v:\n%s", tool.name, connect, startTimeout, tool.stderr)
	}
	sid, ok := strings.CutPrefix(line, "ready ")
	if !ok {
		tool.Kill()
		return tool, fmt.Errorf("curatortest: %s start-up: %s\n%s", tool.name, line, tool.stderr)
	}
	tool.sessionID = sid
	return tool, nil
}

// read dispatches the JVM's stdout: events to the event buffer, other lines to the
// oldest waiting command. At the end of the output it reaps the process.
func (t *Tool) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		t.transcript.line("< " + line)
		if ev, ok := strings.CutPrefix(line, "event "); ok {
			t.evMu.Lock()
			t.events = append(t.events, ev)
			close(t.evWake)
			t.evWake = make(chan struct{})
			t.evMu.Unlock()
			continue
		}
		t.qmu.Lock()
		if len(t.waiters) == 0 {
			t.qmu.Unlock()
			t.transcript.line("! unexpected line")
			continue
		}
		w := t.waiters[0]
		t.waiters = t.waiters[1:]
		t.qmu.Unlock()
		w <- line // buffered: never blocks, even when the caller gave up
	}
	_, _ = io.Copy(io.Discard, r)
	t.waitErr = t.cmd.Wait()
	close(t.exited)
}

// SessionID returns the Curator client's ZooKeeper session id at start, in hex.
func (t *Tool) SessionID() string { return t.sessionID }

// Do sends one command (fmt.Sprintf(format, args...)) and waits for its answer. It
// returns the text after "ok " ("" for a bare "ok"), or a *CommandError holding the
// text after "err ". If ctx ends first it returns ctx.Err(); the command still runs
// and its late answer is dropped.
func (t *Tool) Do(ctx context.Context, format string, args ...any) (string, error) {
	line := fmt.Sprintf(format, args...)
	if strings.ContainsAny(line, "\r\n") || strings.TrimSpace(line) == "" {
		return "", fmt.Errorf("curatortest: bad command %q", line)
	}
	ans, err := t.send(ctx, line)
	if err != nil {
		return "", err
	}
	return parseAnswer(line, ans)
}

func parseAnswer(cmd, ans string) (string, error) {
	switch {
	case ans == "ok":
		return "", nil
	case strings.HasPrefix(ans, "ok "):
		return ans[len("ok "):], nil
	case strings.HasPrefix(ans, "err"):
		return "", &CommandError{Command: cmd, Message: strings.TrimSpace(ans[len("err"):])}
	default:
		return "", fmt.Errorf("curatortest: %s: unexpected answer %q", cmd, ans)
	}
}

func (t *Tool) send(ctx context.Context, line string) (string, error) {
	w := make(chan string, 1)
	t.mu.Lock()
	select {
	case <-t.exited:
		t.mu.Unlock()
		return "", fmt.Errorf("%w (%s: %v)", ErrExited, line, t.waitErr)
	default:
	}
	t.qmu.Lock()
	t.waiters = append(t.waiters, w)
	t.qmu.Unlock()
	t.transcript.line("> " + line)
	_, err := io.WriteString(t.stdin, line+"\n")
	if err != nil {
		t.qmu.Lock()
		if n := len(t.waiters); n > 0 && t.waiters[n-1] == w {
			t.waiters = t.waiters[:n-1]
		}
		t.qmu.Unlock()
	}
	t.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("%w (%s: %v)", ErrExited, line, err)
	}
	select {
	case ans := <-w:
		return ans, nil
	case <-ctx.Done():
		return "", fmt.Errorf("curatortest: %s: %w", line, ctx.Err())
	case <-t.exited:
		select {
		case ans := <-w:
			return ans, nil
		default:
			return "", fmt.Errorf("%w (%s: %v)", ErrExited, line, t.waitErr)
		}
	}
}

// Async sends "async <tag> <command>": the command runs in the background (on its
// handle's thread where the package doc says so) and WaitDone returns its answer.
// Tags should be unique per Tool.
func (t *Tool) Async(ctx context.Context, tag, format string, args ...any) error {
	if tag == "" || strings.ContainsAny(tag, " \t") {
		return fmt.Errorf("curatortest: bad tag %q", tag)
	}
	_, err := t.Do(ctx, "async %s %s", tag, fmt.Sprintf(format, args...))
	return err
}

// WaitDone waits for the "done <tag>" event of a command sent with Async and returns its
// answer as Do would.
func (t *Tool) WaitDone(ctx context.Context, tag string) (string, error) {
	ev, err := t.WaitEvent(ctx, "done "+tag+" ")
	if err != nil {
		return "", err
	}
	return parseAnswer("async "+tag, strings.TrimPrefix(ev, "done "+tag+" "))
}

// WaitEvent waits for an event whose text (the line after "event ") begins with prefix,
// takes it out of the buffer and returns its text. Events are kept until taken, so one
// printed before the call is found; events that do not match stay for other calls.
func (t *Tool) WaitEvent(ctx context.Context, prefix string) (string, error) {
	for {
		// Read exited before scanning: the reader closes it only after buffering every
		// event, so a scan that follows a closed exited has seen them all.
		var gone bool
		select {
		case <-t.exited:
			gone = true
		default:
		}
		t.evMu.Lock()
		for i, ev := range t.events {
			if strings.HasPrefix(ev, prefix) {
				t.events = append(t.events[:i:i], t.events[i+1:]...)
				t.evMu.Unlock()
				return ev, nil
			}
		}
		wake := t.evWake
		t.evMu.Unlock()
		if gone {
			return "", fmt.Errorf("%w (waiting for event %q: %v)", ErrExited, prefix, t.waitErr)
		}
		select {
		case <-wake:
		case <-t.exited:
		case <-ctx.Done():
			return "", fmt.Errorf("curatortest: waiting for event %q: %w", prefix, ctx.Err())
		}
	}
}

// Events returns the events not yet taken by WaitEvent, oldest first, leaving them there.
func (t *Tool) Events() []string {
	t.evMu.Lock()
	defer t.evMu.Unlock()
	return append([]string(nil), t.events...)
}

// Kill ends the JVM with SIGKILL and waits for it to exit. Its session is not closed:
// the server expires it after the session timeout, and only then deletes its ephemeral
// nodes. Killing an exited tool does nothing.
func (t *Tool) Kill() {
	select {
	case <-t.exited:
		return
	default:
	}
	_ = t.cmd.Process.Kill()
	<-t.exited
}

// Close closes the Curator client (its session ends at once, its ephemeral nodes go) and
// waits for the JVM to exit, killing it if it does not within 10 s. It may be called
// more than once.
func (t *Tool) Close() error {
	var err error
	t.closeOnce.Do(func() {
		select {
		case <-t.exited:
		default:
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			defer cancel()
			if _, err = t.Do(ctx, "close"); errors.Is(err, ErrExited) {
				err = nil
			}
			select {
			case <-t.exited:
			case <-ctx.Done():
				t.Kill()
			}
		}
		_ = t.stdin.Close()
	})
	return err
}

// Stderr returns the last part of what the JVM wrote on stderr (stack traces of failed
// commands, JVM warnings).
func (t *Tool) Stderr() string { return t.stderr.String() }

func (t *Tool) logTo(tb testing.TB) {
	tb.Helper()
	tb.Logf("curatortest %s (session 0x%s) transcript:\n%s", t.name, t.sessionID, t.transcript)
	if s := t.stderr.String(); s != "" {
		tb.Logf("curatortest %s stderr:\n%s", t.name, s)
	}
}

// tail keeps the last tailSize bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - tailSize; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tail) line(s string) {
	_, _ = b.Write([]byte(time.Now().Format("15:04:05.000 ") + s + "\n"))
}

func (b *tail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
