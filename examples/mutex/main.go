// Command mutex shows the distributed lock of package recipes/mutex at work:
//
//  1. Thirty goroutines in three clients (think: three processes) take order numbers from
//     one counter node — read, add one, write — under one lock: no number is handed out
//     twice.
//  2. Re-entrancy: the holder acquires again through lease.Context, without a round trip.
//  3. TryAcquire, and Acquire with a deadline, while another client holds the lock.
//  4. A lease's Done closing when its client is cut off from ZooKeeper, and another
//     client taking over once the server expires the cut-off session.
//
// Run it:
//
//	go run ./examples/mutex                     # on an embedded ZooKeeper
//	go run ./examples/mutex -connect host:2181  # on yours (uses /examples/mutex)
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
	"strconv"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

const (
	lockPath    = "/examples/mutex/orders-lock"
	counterPath = "/examples/mutex/order-counter"

	clients           = 3
	workers           = 30 // goroutines, spread over the clients
	ordersPerWorker   = 3
	cutSessionTimeout = 2 * time.Second
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
	cs := make([]*framework.Client, clients)
	ms := make([]*mutex.Mutex, clients)
	for i := range cs {
		c, err := newClient(ctx, connect)
		if err != nil {
			return err
		}
		defer c.Close()
		m, err := mutex.New(c, lockPath) // one Mutex per client; its goroutines share it
		if err != nil {
			return err
		}
		cs[i], ms[i] = c, m
	}
	if err := orderNumbers(ctx, out, cs, ms); err != nil {
		return err
	}
	if err := reentrancy(ctx, out, ms[0]); err != nil {
		return err
	}
	if err := tryAndDeadline(ctx, out, ms[0], ms[1], cs[1]); err != nil {
		return err
	}
	return doneOnCut(ctx, out, connect, ms[1])
}

// orderNumbers has the workers take order numbers under the lock and checks that none
// came out twice.
func orderNumbers(ctx context.Context, out *log.Logger, cs []*framework.Client, ms []*mutex.Mutex) error {
	out.Printf("== order numbers: %d goroutines in %d clients, one lock ==", workers, len(cs))
	if err := cs[0].Delete(ctx, counterPath, framework.Quietly()); err != nil {
		return err
	}
	if _, err := cs[0].Create(ctx, counterPath, []byte("0"), framework.WithParents()); err != nil {
		return err
	}

	numbers := make(chan int64, workers*ordersPerWorker)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for g := range workers {
		c, m := cs[g%len(cs)], ms[g%len(ms)]
		wg.Go(func() {
			for range ordersPerWorker {
				n, err := nextOrderNumber(ctx, c, m)
				if err != nil {
					errs <- err
					return
				}
				numbers <- n
			}
		})
	}
	wg.Wait()
	close(numbers)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}

	seen := map[int64]int{}
	for n := range numbers {
		seen[n]++
	}
	total := workers * ordersPerWorker
	out.Printf("took %d order numbers", total)
	for n := int64(1); n <= int64(total); n++ {
		if seen[n] != 1 {
			return fmt.Errorf("order number %d handed out %d times", n, seen[n])
		}
	}
	out.Printf("every number from 1 to %d exactly once: no duplicate order numbers", total)
	data, _, err := cs[0].GetData(ctx, counterPath)
	if err != nil {
		return err
	}
	out.Printf("the counter node holds %s", data)
	return cs[0].Delete(ctx, counterPath)
}

// nextOrderNumber is the critical section: read the counter, add one, write it back.
// Without the lock two goroutines could read the same value and hand out the same number.
func nextOrderNumber(ctx context.Context, c *framework.Client, m *mutex.Mutex) (int64, error) {
	lease, err := m.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer lease.Release(context.WithoutCancel(ctx))

	// Work under the lock with a context that ends if the lock may be lost.
	work, stop := lease.Context(ctx)
	defer stop()
	data, _, err := c.GetData(work, counterPath)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return 0, err
	}
	n++
	// Version -1 (any): the lock, not a version check, keeps the writers apart.
	if _, err := c.SetData(work, counterPath, []byte(strconv.FormatInt(n, 10)), -1); err != nil {
		return 0, err
	}
	return n, nil
}

// reentrancy re-enters the lock through the holder's lease; a context carrying the lease
// lets nobody in.
func reentrancy(ctx context.Context, out *log.Logger, m *mutex.Mutex) error {
	out.Printf("== re-entrancy ==")
	lease, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	lctx, stop := lease.Context(ctx) // carries the lease
	defer stop()
	if _, err := m.Acquire(lctx); !errors.Is(err, mutex.ErrAlreadyHeld) {
		return fmt.Errorf("acquire with the lease's context: want ErrAlreadyHeld, got %v", err)
	}
	out.Printf("acquiring with lease.Context is refused: ErrAlreadyHeld (it would let every goroutine in)")
	again, err := lease.Reenter() // counts up, no round trip
	if err != nil {
		return err
	}
	out.Printf("lease.Reenter holds the same node: %v", again.Node() == lease.Node())
	parts, err := m.Participants(ctx)
	if err != nil {
		return err
	}
	out.Printf("lock nodes in ZooKeeper: %d", len(parts))
	if _, err := m.TryAcquire(ctx); errors.Is(err, mutex.ErrLocked) {
		out.Printf("a context without the lease contends like another process: TryAcquire says locked")
	} else {
		return fmt.Errorf("TryAcquire without the lease's context: want ErrLocked, got %v", err)
	}
	if err := again.Release(ctx); err != nil {
		return err
	}
	out.Printf("after one Release the lock is still held: %v", m.IsAcquiredInThisProcess())
	if err := lease.Release(ctx); err != nil {
		return err
	}
	out.Printf("after the second Release it is free: %v", !m.IsAcquiredInThisProcess())
	return nil
}

// tryAndDeadline shows what a contender sees while another client holds the lock.
func tryAndDeadline(ctx context.Context, out *log.Logger, holder, other *mutex.Mutex, otherClient *framework.Client) error {
	out.Printf("== TryAcquire and deadlines ==")
	lease, err := holder.Acquire(ctx)
	if err != nil {
		return err
	}
	out.Printf("client 1 holds the lock")
	if _, err := other.TryAcquire(ctx); !errors.Is(err, mutex.ErrLocked) {
		return fmt.Errorf("TryAcquire while held: want ErrLocked, got %v", err)
	}
	out.Printf("client 2: TryAcquire returns at once: %v", mutex.ErrLocked)

	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond) // Curator's acquire(300, MILLISECONDS)
	_, err = other.Acquire(dctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("acquire with a deadline: want DeadlineExceeded, got %v", err)
	}
	out.Printf("client 2: Acquire with a 300ms deadline gives up: %v", context.DeadlineExceeded)
	// A call whose context ended returns at once and deletes its node in the background:
	// WaitGuaranteedDeletes waits until that is done.
	if err := otherClient.WaitGuaranteedDeletes(ctx); err != nil {
		return err
	}
	parts, err := other.Participants(ctx)
	if err != nil {
		return err
	}
	out.Printf("client 2 left no node behind: %d lock node (the holder's)", len(parts))

	if err := lease.Release(ctx); err != nil {
		return err
	}
	l2, err := other.TryAcquire(ctx)
	if err != nil {
		return err
	}
	out.Printf("client 1 released; client 2: TryAcquire gets the lock")
	return l2.Release(ctx)
}

// doneOnCut cuts a holder off from ZooKeeper through a proxy: its lease's Done closes,
// and once the server expires its session another client gets the lock.
func doneOnCut(ctx context.Context, out *log.Logger, connect string, other *mutex.Mutex) error {
	out.Printf("== a lease's Done when the network is cut ==")
	proxy, err := zktest.StartProxyFor(connect)
	if err != nil {
		return err
	}
	viaProxy := proxy.ConnectString()
	defer proxy.Close()
	c, err := framework.Connect(ctx, viaProxy, framework.WithSessionTimeout(cutSessionTimeout))
	if err != nil {
		return err
	}
	defer c.Close()
	m, err := mutex.New(c, lockPath)
	if err != nil {
		return err
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	out.Printf("client 4 (through a proxy) holds the lock")

	proxy.Stall() // a network partition: client 4 hears nothing from now on
	out.Printf("the proxy stalls client 4's traffic")
	select {
	case <-lease.Done():
		out.Printf("client 4: lease.Done closed: the lock may be lost, stop writing")
	case <-time.After(15 * time.Second):
		return errors.New("lease.Done did not close after the network was cut")
	case <-ctx.Done():
		return ctx.Err()
	}

	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l2, err := other.Acquire(actx) // granted once the server expires client 4's session
	if err != nil {
		return err
	}
	out.Printf("client 2 gets the lock once the server expires client 4's session")

	proxy.Heal()
	if err := lease.Release(ctx); errors.Is(err, mutex.ErrLeaseLost) {
		out.Printf("client 4 is back: its Release reports the lease lost, and leaves client 2's node alone")
	} else {
		return fmt.Errorf("release of the cut-off lease: want ErrLeaseLost, got %v", err)
	}
	return l2.Release(ctx)
}
