package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer after it was started.
const startTimeout = 60 * time.Second

// Server is one standalone ZooKeeper server. Its methods are safe for concurrent use.
type Server struct {
	connect  string
	secure   string   // host:port of the secure (TLS) client port; "" when it has none
	proc     *process // nil when the server is not ours to control
	dir      string
	stopExt  func() error
	closeMu  sync.Mutex
	closed   bool
	external bool
	keepDir  bool // dir is the user's (WithDataDir): Close leaves it
}

// StartServer starts a standalone server (or finds one, see the package doc) and waits
// until it answers. The caller must Close it. It is StartStandalone with no options and
// no deadline but the start-up's own (a minute an attempt).
func StartServer() (*Server, error) {
	return StartStandalone(context.Background())
}

// serverPlace says where a local server listens and keeps its files: port 0 is a free
// port, tried again on another when it is taken in between; dir "" is a temporary
// directory that Close removes.
type serverPlace struct {
	port int
	dir  string
}

// localExtras are what a local server has beyond the test settings: a secure client
// port (see StartTLSServer), SASL users (see WithSASLDigestUsers).
type localExtras struct {
	tls  *tlsSetup
	sasl *saslSetup
}

// startLocalServer starts a server from inst at place, with extras; a failed attempt on
// a free port (most likely taken in between) is tried again twice on another. It gives
// up when ctx ends.
func startLocalServer(ctx context.Context, inst *javaInstall, place serverPlace, extras localExtras) (*Server, error) {
	attempts := 3
	if place.port != 0 {
		attempts = 1 // the port asked for, or nothing
	}
	var last error
	for attempt := 0; attempt < attempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dir, removeDir, err := serverDir(place.dir)
		if err != nil {
			return nil, err
		}
		port := place.port
		if port == 0 {
			port, err = freePort()
		} else {
			err = checkPortFree(port)
		}
		if err != nil {
			removeDir()
			return nil, err
		}
		s := &Server{connect: "127.0.0.1:" + strconv.Itoa(port), dir: dir, keepDir: place.dir != ""}
		cfg := filepath.Join(dir, "zoo.cfg")
		var extra, jvmFlags []string
		if extras.tls != nil {
			if extra, s.secure, err = extras.tls.write(dir); err != nil {
				removeDir()
				return nil, err
			}
		}
		if extras.sasl != nil {
			if jvmFlags, err = extras.sasl.write(dir); err != nil {
				removeDir()
				return nil, err
			}
		}
		if err := writeConfig(cfg, filepath.Join(dir, "data"), port, extra...); err != nil {
			removeDir()
			return nil, err
		}
		s.proc = &process{install: inst, mainCls: "org.apache.zookeeper.server.ZooKeeperServerMain",
			cfgPath: cfg, logDir: dir, clientAt: s.connect, jvmFlags: jvmFlags}
		if err := s.proc.start(); err != nil {
			removeDir()
			return nil, err
		}
		if err := waitServing(ctx, s.connect, startTimeout, s.proc.exited()); err != nil {
			last = fmt.Errorf("%w\n%s", err, s.proc.logTail())
			if ctx.Err() != nil {
				last = fmt.Errorf("zktest: start of a server given up: %w", ctx.Err())
			}
			s.proc.kill()
			removeDir()
			continue // on a free port, most likely the port was taken in between: try another
		}
		return s, nil
	}
	return nil, last
}

// serverDir returns the directory of a server's files: dir, made if missing, or a new
// temporary one when dir is "". remove removes a temporary one (and leaves dir).
func serverDir(dir string) (string, func(), error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "zktest-server-")
		if err != nil {
			return "", nil, err
		}
		return tmp, func() { _ = os.RemoveAll(tmp) }, nil
	}
	abs, err := filepath.Abs(dir) // zoo.cfg names it: the server need not run where we do
	if err != nil {
		return "", nil, fmt.Errorf("zktest: data directory: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", nil, fmt.Errorf("zktest: data directory: %w", err)
	}
	return abs, func() {}, nil
}

// StartLocalServer starts a standalone server from a local install (never one named by
// ZK_TEST_CONNECT, never a container), so that it can be stopped, restarted and paused.
func StartLocalServer() (*Server, error) {
	inst, err := findInstall()
	if err != nil {
		return nil, fmt.Errorf("%w (a controllable server needs a local install)\n%s", err, howToGet)
	}
	return startLocalServer(context.Background(), inst, serverPlace{}, localExtras{})
}

// NewLocalServer is StartLocalServer for a test, stopped at the test's cleanup: for tests
// that stop, restart or pause the server. When no local install is available it fails the
// test, or skips it under -short.
func NewLocalServer(t testing.TB) *Server {
	t.Helper()
	s, err := StartLocalServer()
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		keepLogs(t, s.dir)
		_ = s.Close()
	})
	return s
}

// NewServer starts a standalone server for the test and stops it at the test's cleanup.
// When no ZooKeeper is available it fails the test, or skips it under -short.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// unavailable ends a test that cannot get a ZooKeeper: a skip under -short, else a failure.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrUnavailable) && testing.Short() {
		t.Skipf("%v (skipped under -short)", err)
	}
	t.Fatalf("%v", err)
}

// ConnectString returns host:port for clients.
func (s *Server) ConnectString() string { return s.connect }

// Addr returns the server's client address (host:port); the same as ConnectString.
func (s *Server) Addr() string { return strings.Split(s.connect, ",")[0] }

// Dir returns the directory of the server's files: zoo.cfg, server.out (what the server
// logs) and data/. It is "" for a server this package does not run.
func (s *Server) Dir() string { return s.dir }

// Exited returns a channel that is closed when the server's process exits: by Stop or
// Close, or on its own (a crash). After Restart, a new channel is for the new process.
// It is nil for a server this package does not run, and for a stopped one.
func (s *Server) Exited() <-chan struct{} {
	if s.proc == nil {
		return nil
	}
	return s.proc.exited()
}

// Controllable reports whether this package can stop, restart and pause the server
// (false for a server named by ZK_TEST_CONNECT or run in a container).
func (s *Server) Controllable() bool { return s.proc != nil }

// Stop kills the server (SIGKILL), keeping its data for Restart. Stopping a stopped
// server is fine.
func (s *Server) Stop() error {
	if s.proc == nil {
		return ErrUnsupported
	}
	s.proc.kill()
	return nil
}

// Restart starts a stopped server again on the same port with the same data, and waits
// until it answers. A running server is killed first.
func (s *Server) Restart(ctx context.Context) error {
	if s.proc == nil {
		return ErrUnsupported
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.proc.kill()
	deadline := startTimeout
	if d, ok := ctx.Deadline(); ok {
		deadline = time.Until(d)
	}
	var last error
	for try := 0; try < 20; try++ { // the port may linger for a moment after a kill
		if err := s.proc.start(); err != nil {
			return err
		}
		if last = waitServing(ctx, s.connect, deadline, s.proc.exited()); last == nil {
			return nil
		}
		s.proc.kill()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%w\n%s", last, s.proc.logTail())
}

// Pause stops the server process with SIGSTOP: it holds its sockets open and answers
// nothing, like a hung machine. It returns once the process has stopped. Resume
// continues it.
func (s *Server) Pause() error {
	if s.proc == nil {
		return ErrUnsupported
	}
	return s.proc.signal(syscall.SIGSTOP)
}

// Resume continues a server stopped by Pause.
func (s *Server) Resume() error {
	if s.proc == nil {
		return ErrUnsupported
	}
	return s.proc.signal(syscall.SIGCONT)
}

func (s *Server) checkOpen() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Close stops the server (SIGKILL: ZooKeeper's transaction log is made to survive that)
// and removes its data, unless the data is in a directory named by WithDataDir. No
// process of the server is left when it returns. It may be called more than once.
func (s *Server) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.proc != nil {
		s.proc.kill()
	}
	if s.stopExt != nil {
		err = s.stopExt()
	}
	if s.dir != "" && !s.keepDir {
		_ = os.RemoveAll(s.dir)
	}
	return err
}
