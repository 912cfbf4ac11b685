// Command revocation shows cooperative lock revocation (Curator's Revoker): a holder that
// made its lock revocable is asked by another client to let go, and does.
//
// A holder opts in with mutex.WithRevocationListener. Anyone may then call mutex.Revoke
// with the holder's lock node (the first of Participants); that writes __REVOKE__ into the
// node, and the holder's listener decides what to do — here, finish up and release. A
// holder without a listener ignores the request. Go and Curator (Java) holders can revoke
// each other. From a shell: `zkcurator lock revoke <node>`.
//
//	go run ./examples/revocation                     # on an embedded ZooKeeper
//	go run ./examples/revocation -connect host:2181  # on yours (uses /examples/revocation)
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
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

const lockPath = "/examples/revocation/report-lock"

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
	ca, err := newClient(ctx, connect)
	if err != nil {
		return err
	}
	defer ca.Close()
	cb, err := newClient(ctx, connect)
	if err != nil {
		return err
	}
	defer cb.Close()

	// A: a long-running report generator that gives the lock up when asked.
	released := make(chan error, 1)
	ma, err := mutex.New(ca, lockPath, mutex.WithRevocationListener(func(l *mutex.Lease) {
		out.Printf("A: asked to let go: finishing the current step, then releasing")
		released <- l.Release(context.WithoutCancel(ctx))
	}))
	if err != nil {
		return err
	}
	leaseA, err := ma.Acquire(ctx)
	if err != nil {
		return err
	}
	out.Printf("A: holds the lock (revocable)")

	// B: an operator's urgent job.
	mb, err := mutex.New(cb, lockPath)
	if err != nil {
		return err
	}
	if _, err := mb.TryAcquire(ctx); !errors.Is(err, mutex.ErrLocked) {
		return fmt.Errorf("TryAcquire while A holds: want ErrLocked, got %v", err)
	}
	out.Printf("B: the lock is busy")
	parts, err := mb.Participants(ctx)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return errors.New("no participants while A holds the lock")
	}
	out.Printf("B: asks the holder (the first participant) to let go")
	if err := mutex.Revoke(ctx, cb, parts[0]); err != nil {
		return err
	}

	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	leaseB, err := mb.Acquire(actx)
	if err != nil {
		return fmt.Errorf("client B: acquiring after the revocation: %w", err)
	}
	out.Printf("B: holds the lock")
	if err := <-released; err != nil {
		return fmt.Errorf("client A: release: %w", err)
	}
	select {
	case <-leaseA.Done():
		out.Printf("A: its lease is over (Done is closed)")
	default:
		return errors.New("client A's lease is not done after its release")
	}
	return leaseB.Release(ctx)
}
