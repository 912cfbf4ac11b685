package main

// The scaffolding of this example, kept out of main.go: the -connect flag, an embedded
// ZooKeeper when it is empty, and lines printed whole from several goroutines. The
// client, its options and the recipe are all in main.go.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/zktest"
)

// mainWith parses -connect (a ZooKeeper connect string; when empty, a ZooKeeper is
// started for the run with package zktest, which needs Java and ZooKeeper 3.8: `make
// deps-base`), runs run with Ctrl-C handling and a two-minute limit, and exits non-zero
// on error.
func mainWith(run func(ctx context.Context, connect string, out io.Writer) error) {
	connect := flag.String("connect", os.Getenv("ZK_CONNECT"),
		"ZooKeeper connect string host:port[,host:port...][/chroot] (default $ZK_CONNECT); empty starts an embedded ZooKeeper")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := runOn(ctx, *connect, run)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func runOn(ctx context.Context, connect string, run func(ctx context.Context, connect string, out io.Writer) error) error {
	if connect == "" {
		fmt.Fprintln(os.Stderr, "(starting an embedded ZooKeeper; pass -connect host:port to use yours)")
		srv, err := zktest.StartServer()
		if err != nil {
			return err
		}
		defer srv.Close()
		connect = srv.ConnectString()
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return run(ctx, connect, os.Stdout)
}

// printer writes whole lines to an io.Writer from any goroutine.
type printer struct {
	mu  sync.Mutex
	out io.Writer
}

func newPrinter(out io.Writer) *printer { return &printer{out: out} }

// Printf writes one formatted line (a newline is added).
func (p *printer) Printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, format+"\n", args...)
}
