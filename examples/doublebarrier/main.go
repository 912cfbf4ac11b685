// Command doublebarrier shows package recipes/doublebarrier (Curator's
// DistributedDoubleBarrier): the three workers of a batch job enter together — none
// starts before the last one has arrived — and leave together — none moves on before the
// slowest has finished.
//
//	go run ./examples/doublebarrier                     # on an embedded ZooKeeper
//	go run ./examples/doublebarrier -connect host:2181  # on yours (uses /examples/doublebarrier)
//
// From a shell: `zkcurator doublebarrier run <path> --members N -- <command...>`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

const (
	barrierPath = "/examples/doublebarrier/nightly-job"
	workers     = 3
)

// journal records what the workers did, in order.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

// index returns where e was recorded (-1 if it was not).
func (j *journal) index(e string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Index(j.events, e)
}

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
	var j journal
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		c, err := newClient(ctx, connect) // each worker as its own process
		if err != nil {
			return err
		}
		defer c.Close()
		member, err := doublebarrier.New(c, barrierPath, workers) // one value per member
		if err != nil {
			return err
		}
		wg.Go(func() {
			if i == workers-1 {
				time.Sleep(500 * time.Millisecond) // the last worker is late to arrive
			}
			j.add(fmt.Sprintf("arrive %d", i))
			if errs[i] = member.Enter(ctx); errs[i] != nil {
				return
			}
			j.add(fmt.Sprintf("start %d", i))
			if i == 0 {
				time.Sleep(500 * time.Millisecond) // the first worker's part is slow
			}
			j.add(fmt.Sprintf("finish %d", i))
			if errs[i] = member.Leave(ctx); errs[i] != nil {
				return
			}
			j.add(fmt.Sprintf("leave %d", i))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("worker %d: %w", i, err)
		}
	}

	lastArrival, firstStart := -1, len(j.events)
	lastFinish, firstLeave := -1, len(j.events)
	for i := range workers {
		lastArrival = max(lastArrival, j.index(fmt.Sprintf("arrive %d", i)))
		firstStart = min(firstStart, j.index(fmt.Sprintf("start %d", i)))
		lastFinish = max(lastFinish, j.index(fmt.Sprintf("finish %d", i)))
		firstLeave = min(firstLeave, j.index(fmt.Sprintf("leave %d", i)))
	}
	out.Printf("%d workers entered, did their part and left", workers)
	if lastArrival < firstStart {
		out.Printf("no worker started before the last one (worker %d, late) arrived", workers-1)
	} else {
		return fmt.Errorf("a worker started before all had arrived: %v", j.events)
	}
	if lastFinish < firstLeave {
		out.Printf("no worker left before the slowest one (worker 0) finished")
	} else {
		return fmt.Errorf("a worker left before all had finished: %v", j.events)
	}
	return nil
}
