// Command fencing shows why a lease has a fencing token (Lease.Token).
//
// A lock in ZooKeeper cannot stop a holder that pauses — a long GC pause, a SIGSTOP,
// a VM migration — from outliving its session and waking up still believing it holds the
// lock. Its lease's Done is closed by then, but a paused process cannot look at it in
// time: its write may already be on the way. The cure is on the resource's side: every
// write carries the writer's token, tokens grow from one holder to the next, and the
// resource refuses a token older than the highest it has seen.
//
// Here the resource is a toy in-process storage service. Holder A pauses (simulated by
// stalling its client's traffic through a proxy until the server expires its session);
// B gets the lock and writes; A wakes up and sends its late write, which is refused.
//
//	go run ./examples/fencing                     # on an embedded ZooKeeper
//	go run ./examples/fencing -connect host:2181  # on yours (uses /examples/fencing)
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
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

const lockPath = "/examples/fencing/ledger-lock"

// errStaleToken is the storage's answer to a write from an older lock holder.
var errStaleToken = errors.New("storage: token older than the highest seen")

// storage is a toy storage service that fences its writers: it remembers the highest
// token it has seen and refuses writes that carry an older one. It is safe for
// concurrent use.
type storage struct {
	mu      sync.Mutex
	highest int64
	records []string
}

// Write appends record if token is not older than every token seen so far.
func (s *storage) Write(token int64, record string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return errStaleToken
	}
	s.highest = token
	s.records = append(s.records, record)
	return nil
}

// Records returns what was written.
func (s *storage) Records() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.records...)
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
	store := &storage{}

	// A reaches ZooKeeper through a proxy, so that we can "pause" it.
	proxy, err := zktest.StartProxyFor(connect)
	if err != nil {
		return err
	}
	viaProxy := proxy.ConnectString()
	defer proxy.Close()
	ca, err := framework.Connect(ctx, viaProxy, framework.WithSessionTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer ca.Close()
	cb, err := newClient(ctx, connect)
	if err != nil {
		return err
	}
	defer cb.Close()
	ma, err := mutex.New(ca, lockPath)
	if err != nil {
		return err
	}
	mb, err := mutex.New(cb, lockPath)
	if err != nil {
		return err
	}

	leaseA, err := ma.Acquire(ctx)
	if err != nil {
		return err
	}
	tokenA, err := leaseA.Token(ctx)
	if err != nil {
		return err
	}
	out.Printf("A: holds the lock")
	if err := store.Write(tokenA, "A: balance=100"); err != nil {
		return err
	}
	out.Printf("storage: accepted A's write")

	// A pauses: it is about to write again, but hears nothing and does nothing for longer
	// than its session timeout. Meanwhile B waits for the lock.
	proxy.Stall()
	out.Printf("A: pauses (its traffic is stalled) with a write still to send")
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	leaseB, err := mb.Acquire(actx) // granted once the server expires A's session
	if err != nil {
		return fmt.Errorf("client B: %w", err)
	}
	tokenB, err := leaseB.Token(ctx)
	if err != nil {
		return err
	}
	out.Printf("B: holds the lock after the server expired A's session")
	out.Printf("B's token is greater than A's: %v", tokenB > tokenA)
	if err := store.Write(tokenB, "B: balance=80"); err != nil {
		return err
	}
	out.Printf("storage: accepted B's write")

	// A wakes up and sends the write it had prepared, with the token it had.
	proxy.Heal()
	out.Printf("A: wakes up and sends its write")
	switch err := store.Write(tokenA, "A: balance=130"); {
	case errors.Is(err, errStaleToken):
		out.Printf("storage: late write refused (%v)", err)
	case err == nil:
		return errors.New("storage accepted a write from a holder whose lock had passed on")
	default:
		return err
	}
	select {
	case <-leaseA.Done():
		out.Printf("A: looks at its lease at last: Done is closed, the lock was lost")
	case <-time.After(10 * time.Second):
		return errors.New("client A's lease.Done is not closed")
	}
	if err := leaseA.Release(ctx); !errors.Is(err, mutex.ErrLeaseLost) {
		return fmt.Errorf("client A: Release: want ErrLeaseLost, got %v", err)
	}
	if err := leaseB.Release(ctx); err != nil {
		return err
	}
	for _, r := range store.Records() {
		out.Printf("storage holds: %s", r)
	}
	return nil
}
