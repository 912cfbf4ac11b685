// Command semaphore shows the distributed counting semaphore of package recipes/semaphore
// (Curator's InterProcessSemaphoreV2): ten workers in two clients share three leases —
// say, three licences of a tool, or three connections a database allows a batch job —
// and never more than three work at once. Then a job takes two leases at once with
// AcquireN, and TryAcquireN shows what is left.
//
//	go run ./examples/semaphore                     # on an embedded ZooKeeper
//	go run ./examples/semaphore -connect host:2181  # on yours (uses /examples/semaphore)
package main

import (
	"context"
	"errors"
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
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

const (
	semPath   = "/examples/semaphore/licences"
	maxLeases = 3
	workers   = 10
	clients   = 2
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
	sems := make([]*semaphore.Semaphore, clients)
	for i := range sems {
		c, err := newClient(ctx, connect)
		if err != nil {
			return err
		}
		defer c.Close()
		// Every participant must use the same maximum (Curator's rule too).
		if sems[i], err = semaphore.New(c, semPath, maxLeases); err != nil {
			return err
		}
	}

	out.Printf("== %d workers in %d clients, %d leases ==", workers, clients, maxLeases)
	var now, peak atomic.Int32
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		s := sems[i%clients]
		wg.Go(func() {
			lease, err := s.Acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer lease.Release(context.WithoutCancel(ctx))
			n := now.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(200 * time.Millisecond) // the work
			now.Add(-1)
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	out.Printf("all %d workers finished", workers)
	if p := peak.Load(); p <= maxLeases {
		out.Printf("never more than %d at once (most at once: %d)", maxLeases, p)
	} else {
		return fmt.Errorf("%d workers held a lease at once, more than %d", p, maxLeases)
	}

	out.Printf("== several leases at once ==")
	leases, err := sems[0].AcquireN(ctx, 2)
	if err != nil {
		return err
	}
	out.Printf("client 1: AcquireN(2) took %d leases", len(leases))
	if _, err := sems[1].TryAcquireN(ctx, 2); !errors.Is(err, semaphore.ErrNoLeases) {
		return fmt.Errorf("TryAcquireN(2) with one lease free: want ErrNoLeases, got %v", err)
	}
	out.Printf("client 2: TryAcquireN(2) takes none: %v", semaphore.ErrNoLeases)
	one, err := sems[1].TryAcquire(ctx)
	if err != nil {
		return err
	}
	out.Printf("client 2: TryAcquire takes the last one")
	if _, err := sems[1].TryAcquire(ctx); !errors.Is(err, semaphore.ErrNoLeases) {
		return fmt.Errorf("TryAcquire with no lease free: want ErrNoLeases, got %v", err)
	}
	out.Printf("client 2: one more TryAcquire: %v", semaphore.ErrNoLeases)
	if err := semaphore.ReturnAll(ctx, append(leases, one)...); err != nil {
		return err
	}
	parts, err := sems[0].Participants(ctx)
	if err != nil {
		return err
	}
	out.Printf("after ReturnAll, leases held: %d", len(parts))
	return nil
}
