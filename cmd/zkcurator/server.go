package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zoocurator/zoocurator/zktest"
)

// defaultServerPort is ZooKeeper's usual client port, and the port of zkcurator's
// default connect string.
const defaultServerPort = 2181

// server is `zkcurator server [--port P] [--data DIR]`: a ZooKeeper for development,
// run until interrupted.
func (a *app) server(ctx context.Context, args []string) error {
	const topic = "server"
	fs := a.newFlagSet(topic)
	port := fs.Int("port", defaultServerPort, "the client port on 127.0.0.1 (0: any free port)")
	data := fs.String("data", "", "keep the data in this directory (default: a temporary one, removed at exit)")
	if _, _, err := a.parseArgs(fs, topic, args, nil, false); err != nil {
		return err
	}
	if *port < 0 || *port > 65535 {
		return usagef(topic, "%s: --port must be 0-65535, not %d", topic, *port)
	}

	srv, err := zktest.StartStandalone(ctx, zktest.WithPort(*port), zktest.WithDataDir(*data))
	switch {
	case errors.Is(err, zktest.ErrPortInUse):
		return exitWith(exitError, "port %d on 127.0.0.1 is in use (a ZooKeeper already running? 'zkcurator --connect 127.0.0.1:%d ls /' asks it); choose another with --port",
			*port, *port)
	case err != nil && ctx.Err() != nil:
		return exitWith(exitInterrupted, "interrupted while starting ZooKeeper")
	case errors.Is(err, zktest.ErrUnavailable):
		cause, _, _ := strings.Cut(err.Error(), "\n")
		return exitWith(exitError, "zkcurator server needs Java and ZooKeeper 3.8: run 'make deps-base' in zoocurator's "+
			"checkout, or 'apt-get install default-jre-headless zookeeper', or set ZOOKEEPER_HOME to an unpacked "+
			"ZooKeeper release (java on PATH or in JAVA_HOME)\n(%s)", cause)
	case err != nil:
		return exitWith(exitError, "starting ZooKeeper: %v", err)
	}
	defer srv.Close()

	kept := "kept"
	if *data == "" {
		kept = "removed when it stops"
	}
	fmt.Fprintf(a.stdout, "%s is serving on %s.\n  data: %s (%s)\n  log:  %s\n\n",
		serverVersion(srv.Addr()), srv.ConnectString(), srv.Dir(), kept, filepath.Join(srv.Dir(), "server.out"))
	fmt.Fprintf(a.stdout, "In another shell:\n\n    export ZK_CONNECT=%s\n    zkcurator tree /\n\nCtrl-C stops it.\n", srv.ConnectString())

	select {
	case <-ctx.Done():
	case <-srv.Exited():
		return exitWith(exitError, "ZooKeeper stopped on its own; the end of its log:\n%s", logTail(srv.Dir()))
	}
	fmt.Fprintln(a.stderr, "zkcurator: stopping ZooKeeper")
	if err := srv.Close(); err != nil {
		return exitWith(exitError, "stopping ZooKeeper: %v", err)
	}
	return nil
}

// serverVersion names the server at addr with its version, as its srvr says.
func serverVersion(addr string) string {
	out, err := zktest.FourLetterWord(addr, "srvr", 5*time.Second)
	if err != nil {
		return "ZooKeeper"
	}
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Zookeeper version: "); ok {
			v, _, _ = strings.Cut(v, "-") // 3.8.0-<commit>, built on <date>
			return "ZooKeeper " + strings.TrimSpace(v)
		}
	}
	return "ZooKeeper"
}

// logTail returns the end of the server's log in dir.
func logTail(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "server.out"))
	if err != nil {
		return err.Error()
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
