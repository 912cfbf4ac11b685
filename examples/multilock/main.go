// Command multilock shows package recipes/multilock (Curator's InterProcessMultiLock):
// several locks taken as one, all or none. A money transfer needs both accounts' locks;
// while a transfer holds them, neither account can be touched alone; and a transfer that
// cannot get both within its deadline holds neither.
//
//	go run ./examples/multilock                     # on an embedded ZooKeeper
//	go run ./examples/multilock -connect host:2181  # on yours (uses /examples/multilock)
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
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

const (
	alicePath = "/examples/multilock/accounts/alice"
	bobPath   = "/examples/multilock/accounts/bob"
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
	ca, err := newClient(ctx, connect) // the transfer service
	if err != nil {
		return err
	}
	defer ca.Close()
	cb, err := newClient(ctx, connect) // another service that touches single accounts
	if err != nil {
		return err
	}
	defer cb.Close()

	out.Printf("== two resources at once ==")
	// Every process must list the locks in the same order, or two multi-locks can deadlock.
	transfer, err := multilock.NewFromPaths(ca, alicePath, bobPath)
	if err != nil {
		return err
	}
	both, err := transfer.Acquire(ctx)
	if err != nil {
		return err
	}
	out.Printf("A: holds alice and bob: transfers 10 from alice to bob")
	bobB, err := mutex.New(cb, bobPath)
	if err != nil {
		return err
	}
	aliceB, err := mutex.New(cb, alicePath)
	if err != nil {
		return err
	}
	if _, err := aliceB.TryAcquire(ctx); !errors.Is(err, mutex.ErrLocked) {
		return fmt.Errorf("client B: alice during the transfer: want ErrLocked, got %v", err)
	}
	if _, err := bobB.TryAcquire(ctx); !errors.Is(err, mutex.ErrLocked) {
		return fmt.Errorf("client B: bob during the transfer: want ErrLocked, got %v", err)
	}
	out.Printf("B: cannot lock alice or bob alone meanwhile")
	if err := both.Release(ctx); err != nil {
		return err
	}
	out.Printf("A: released both (in reverse order)")

	out.Printf("== all or none ==")
	bobLease, err := bobB.Acquire(ctx)
	if err != nil {
		return err
	}
	out.Printf("B: holds bob")
	// Built from the locks themselves (New + From): any mix of mutexes, read or write
	// locks and semaphore mutexes.
	aliceA, err := mutex.New(ca, alicePath)
	if err != nil {
		return err
	}
	bobA, err := mutex.New(ca, bobPath)
	if err != nil {
		return err
	}
	transfer2, err := multilock.New(multilock.From(aliceA.Acquire), multilock.From(bobA.Acquire))
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = transfer2.Acquire(dctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("client A: transfer while bob is held: want DeadlineExceeded, got %v", err)
	}
	out.Printf("A: gives up after its 500ms deadline: %v", context.DeadlineExceeded)
	l, err := aliceB.TryAcquire(ctx)
	if err != nil {
		return fmt.Errorf("alice after A gave up: %w", err)
	}
	if err := l.Release(ctx); err != nil {
		return err
	}
	out.Printf("B: alice is free: A did not keep the half it had taken")
	if err := bobLease.Release(ctx); err != nil {
		return err
	}
	both, err = transfer2.Acquire(ctx)
	if err != nil {
		return err
	}
	out.Printf("A: once B released bob, A holds both and transfers")
	return both.Release(ctx)
}
