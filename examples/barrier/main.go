// Command barrier shows package recipes/barrier (Curator's DistributedBarrier): a
// coordinator sets a barrier, workers in other clients wait on it, and removing it once
// the input is ready releases them all at once.
//
//	go run ./examples/barrier                     # on an embedded ZooKeeper
//	go run ./examples/barrier -connect host:2181  # on yours (uses /examples/barrier)
//
// From a shell: `zkcurator barrier set|wait|remove <path>`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/zktest"
)

const (
	gatePath = "/examples/barrier/nightly-start"
	workers  = 3
)

func main() {
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
		os.Exit(1)
	}
}

// sessionTimeout is the session timeout this example's clients ask for (framework's
// default is 30 s; Curator asks for 60 s). It is how long the server keeps the session of a client
// that went silent — crashed, paused or cut off — and with it the client's ephemeral
// nodes: its lock, lease or election nodes. Others wait up to that long before a crashed
// holder's place is theirs. Shorter means a faster take-over, but a pause or network blip
// that long costs a holder its session.
const sessionTimeout = 4 * time.Second

// newClient connects a client to ZooKeeper with the options this example relies on.
// Close it when done.
func newClient(ctx context.Context, connect string) (*framework.Client, error) {
	c, err := framework.Connect(ctx, connect, framework.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", connect, err)
	}
	return c, nil
}

func run(ctx context.Context, connect string, w io.Writer) error {
	out := log.New(w, "", 0)
	coord, err := newClient(ctx, connect)
	if err != nil {
		return err
	}
	defer coord.Close()
	gate, err := barrier.New(coord, gatePath)
	if err != nil {
		return err
	}
	if err := gate.Set(ctx); err != nil { // before any worker starts
		return err
	}
	out.Printf("coordinator: barrier set")

	var started atomic.Int32
	results := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		c, err := newClient(ctx, connect) // each worker as its own process
		if err != nil {
			return err
		}
		defer c.Close()
		b, err := barrier.New(c, gatePath)
		if err != nil {
			return err
		}
		wg.Go(func() {
			if results[i] = b.Wait(ctx); results[i] == nil {
				started.Add(1)
			}
		})
	}
	out.Printf("%d workers wait at the barrier", workers)

	time.Sleep(500 * time.Millisecond) // the coordinator prepares the input
	out.Printf("coordinator: input ready; workers started so far: %d", started.Load())
	if err := gate.Remove(ctx); err != nil {
		return err
	}
	out.Printf("coordinator: barrier removed")
	wg.Wait()
	for i, err := range results {
		if err != nil {
			return fmt.Errorf("worker %d: %w", i, err)
		}
		out.Printf("worker %d: released, starts its work", i)
	}
	return nil
}
