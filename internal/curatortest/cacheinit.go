package curatortest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed java/CuratorCacheInit.java
var cacheInitSource []byte

// cacheInitProgram is what StartCacheInit runs.
var cacheInitProgram = &javaProgram{mainClass: "CuratorCacheInit", source: cacheInitSource}

// CacheInitResult is what the JVM measured of one CuratorCache's start.
type CacheInitResult struct {
	Cached    int     `json:"cached"`     // nodes the cache held at Initialized
	Seconds   float64 `json:"seconds"`    // from the cache's start to Initialized
	HeapBytes int64   `json:"heap_bytes"` // the JVM's heap in use after a GC, less that before the start
}

// CacheInit is one JVM that starts one Curator 5.4 CuratorCache (java/CuratorCacheInit.java):
// StartCacheInit returns it with its session connected; Run starts the cache and returns
// what it measured; Close closes the cache and the session. Between Run and Close the
// cache and its watches stay, so that the caller can read the server's counters.
type CacheInit struct{ b *Bench }

// StartCacheInit compiles and starts the JVM and waits until its session is connected.
// An error matching ErrUnavailable says Java or Curator is not installed.
func StartCacheInit(ctx context.Context, connect string, sessionTimeout time.Duration, base string) (*CacheInit, error) {
	tc, err := findToolchain()
	if err != nil {
		return nil, err
	}
	dir, err := cacheInitProgram.compiled(tc)
	if err != nil {
		return nil, err
	}
	args := []string{"-Xmx1g", "-Djava.io.tmpdir=" + os.TempDir(),
		"-cp", strings.Join(append([]string{dir}, tc.classpath...), string(os.PathListSeparator)),
		cacheInitProgram.mainClass, connect, strconv.FormatInt(sessionTimeout.Milliseconds(), 10), base}
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
	return &CacheInit{b: b}, nil
}

// Run starts the cache and returns what the JVM measured once it reported Initialized.
// Run may be called once.
func (ci *CacheInit) Run(ctx context.Context) (CacheInitResult, error) {
	var r CacheInitResult
	line, err := ci.b.Run(ctx)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return r, fmt.Errorf("%w: %q: %v", ErrBenchFailed, line, err)
	}
	return r, nil
}

// Updates measures how soon the cache hears n changes: it has the JVM count the cache's
// creations and changes whose data starts with marker (a word without spaces), once per
// path, then calls change (which should set n nodes' data to start with marker) and
// returns the time from change's call until the JVM heard n. Run must have returned.
func (ci *CacheInit) Updates(ctx context.Context, n int, marker string, change func() error) (time.Duration, error) {
	if strings.ContainsAny(marker, " \n") || marker == "" {
		return 0, fmt.Errorf("curatortest: marker %q: one word", marker)
	}
	if _, err := fmt.Fprintf(ci.b.stdin, "updates %d %s\n", n, marker); err != nil {
		return 0, fmt.Errorf("%w: %v:\n%s", ErrBenchFailed, err, ci.b.stderr)
	}
	if _, err := ci.b.next(ctx, "armed"); err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := change(); err != nil {
		return 0, err
	}
	if _, err := ci.b.next(ctx, "heard"); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// Close closes the cache and the session and waits for the JVM to exit (see Bench.Close).
func (ci *CacheInit) Close() error { return ci.b.Close() }
