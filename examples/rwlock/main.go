// Command rwlock shows the distributed read-write lock of package recipes/rwlock
// (Curator's InterProcessReadWriteLock): readers share it, a writer has it alone and is
// not starved by readers that come after it, a writer can downgrade to a reader without a
// queued writer slipping in between, and upgrading is refused.
//
//	go run ./examples/rwlock                     # on an embedded ZooKeeper
//	go run ./examples/rwlock -connect host:2181  # on yours (uses /examples/rwlock)
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
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/zktest"
)

const (
	lockPath = "/examples/rwlock/catalog"
	readers  = 3
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

// acquired is the outcome of an Acquire run in the background.
type acquired struct {
	lease *rwlock.Lease
	err   error
}

func goAcquire(ctx context.Context, l *rwlock.Lock) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		lease, err := l.Acquire(ctx)
		ch <- acquired{lease, err}
	}()
	return ch
}

func run(ctx context.Context, connect string, w io.Writer) error {
	out := log.New(w, "", 0)
	// One client per participant, as if each were its own process.
	locks := make([]*rwlock.RWLock, readers+2)
	for i := range locks {
		c, err := newClient(ctx, connect)
		if err != nil {
			return err
		}
		defer c.Close()
		if locks[i], err = rwlock.New(c, lockPath); err != nil {
			return err
		}
	}
	writer, writer2 := locks[readers], locks[readers+1]

	out.Printf("== readers together ==")
	var readLeases []*rwlock.Lease
	for _, rw := range locks[:readers] {
		l, err := rw.ReadLock().Acquire(ctx)
		if err != nil {
			return err
		}
		readLeases = append(readLeases, l)
	}
	out.Printf("%d readers hold the read lock at the same time", len(readLeases))

	out.Printf("== writers alone ==")
	wres := goAcquire(ctx, writer.WriteLock())
	if err := waitParticipants(ctx, writer, readers+1); err != nil {
		return err
	}
	select {
	case r := <-wres:
		return fmt.Errorf("the writer got in while readers held the lock (%v)", r.err)
	default:
		out.Printf("the writer queues behind the readers")
	}
	if _, err := locks[0].ReadLock().TryAcquire(ctx); !errors.Is(err, rwlock.ErrLocked) {
		return fmt.Errorf("a new reader behind a queued writer: want ErrLocked, got %v", err)
	}
	out.Printf("a new reader does not overtake the queued writer: %v", rwlock.ErrLocked)
	for _, l := range readLeases {
		if err := l.Release(ctx); err != nil {
			return err
		}
	}
	r := <-wres
	if r.err != nil {
		return r.err
	}
	wlease := r.lease
	out.Printf("the readers released; the writer holds the lock alone")
	if _, err := locks[1].ReadLock().TryAcquire(ctx); !errors.Is(err, rwlock.ErrLocked) {
		return fmt.Errorf("a reader while the writer holds: want ErrLocked, got %v", err)
	}
	out.Printf("a reader cannot get in meanwhile: %v", rwlock.ErrLocked)

	out.Printf("== downgrade ==")
	rlease, err := wlease.Downgrade(ctx) // through the write lease: granted at once
	if err != nil {
		return err
	}
	if err := wlease.Release(ctx); err != nil {
		return err
	}
	out.Printf("the writer takes the read lock, then releases the write lock")
	other, err := locks[0].ReadLock().TryAcquire(ctx)
	if err != nil {
		return fmt.Errorf("a reader next to the downgraded holder: %w", err)
	}
	out.Printf("another reader joins the downgraded holder")
	if err := other.Release(ctx); err != nil {
		return err
	}
	w2res := goAcquire(ctx, writer2.WriteLock())
	if err := waitParticipants(ctx, writer2, 2); err != nil {
		return err
	}
	select {
	case r := <-w2res:
		return fmt.Errorf("a second writer slipped in beside the downgraded reader (%v)", r.err)
	default:
		out.Printf("a second writer waits until the downgraded holder is done reading")
	}

	rctx, stopR := rlease.Context(ctx)
	defer stopR()
	if _, err := writer.WriteLock().Acquire(rctx); errors.Is(err, rwlock.ErrUpgrade) {
		out.Printf("upgrading back to the write lock is refused: %v", rwlock.ErrUpgrade)
	} else {
		return fmt.Errorf("upgrade: want ErrUpgrade, got %v", err)
	}
	if err := rlease.Release(ctx); err != nil {
		return err
	}
	r = <-w2res
	if r.err != nil {
		return r.err
	}
	out.Printf("the read lock released; the second writer holds the lock")
	return r.lease.Release(ctx)
}

// waitParticipants waits until the lock has n nodes (readers and writers).
func waitParticipants(ctx context.Context, rw *rwlock.RWLock, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		parts, err := rw.Participants(ctx)
		if err != nil {
			return err
		}
		if len(parts) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d lock nodes: %w", n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
