// Package demo is the main of every example program: it reads -connect (default
// $ZK_CONNECT), starts a standalone ZooKeeper for the run when none is named
// (zktest.StartStandalone), runs the example until it ends or Ctrl-C, and exits 1 with
// the error it returned.
package demo

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/zoocurator/zoocurator/zktest"
)

// Main runs run against the servers -connect names, or against one started for the run.
func Main(run func(ctx context.Context, connect string, out io.Writer) error) {
	connect := flag.String("connect", os.Getenv("ZK_CONNECT"),
		"ZooKeeper host:port[,host:port...][/chroot] (default $ZK_CONNECT); empty: start one for this run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv, err := zktest.StartStandalone(ctx, zktest.UseServers(*connect), zktest.WithStartNotice(os.Stderr))
	if err == nil {
		err = run(ctx, srv.ConnectString(), os.Stdout)
		srv.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		stop()
		os.Exit(1)
	}
}
