package leader_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// A service runs a periodic job only while it is leader. Every instance runs the same
// code; the latch decides which one does the work.
func ExampleLatch() {
	srv, err := zktest.StartServer() // or your ensemble's connect string
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Connect(ctx, srv.ConnectString())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	latch, err := leader.NewLatch(client, "/services/billing/leader", "billing-1")
	if err != nil {
		log.Fatal(err)
	}
	if err := latch.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer latch.Close()

	runs := 0
	for runs < 3 {
		if err := latch.Await(ctx); err != nil {
			log.Fatal(err)
		}
		term, err := latch.Term()
		if err != nil {
			continue // lost again already: wait for the next term
		}
		// Work with a context that ends when leadership may be lost.
		work, stop := term.Context(ctx)
		tick := time.NewTicker(10 * time.Millisecond)
		for runs < 3 && work.Err() == nil {
			select {
			case <-work.Done():
			case <-tick.C:
				runs++
				fmt.Println("leader: running the periodic job, run", runs)
			}
		}
		tick.Stop()
		stop()
	}
	// Output:
	// leader: running the periodic job, run 1
	// leader: running the periodic job, run 2
	// leader: running the periodic job, run 3
}

// The same service with a selector: the job runs in the leadership function, which
// returns when leadership may be lost; AutoRequeue puts the service back in line.
func ExampleSelector() {
	srv, err := zktest.StartServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Connect(ctx, srv.ConnectString())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	done := make(chan struct{})
	job := func(ctx context.Context) error {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for run := 1; run <= 3; run++ {
			select {
			case <-ctx.Done(): // leadership may be lost, or Close
				return ctx.Err()
			case <-tick.C:
				fmt.Println("leader: running the periodic job, run", run)
			}
		}
		close(done)
		<-ctx.Done() // keep leading until Close
		return nil
	}
	sel, err := leader.NewSelector(client, "/services/billing/leader", "billing-1", job, leader.AutoRequeue())
	if err != nil {
		log.Fatal(err)
	}
	if err := sel.Start(ctx); err != nil {
		log.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	sel.Close()
	// Output:
	// leader: running the periodic job, run 1
	// leader: running the periodic job, run 2
	// leader: running the periodic job, run 3
}

// A process that takes no part in an election — a follower, a router, a dashboard —
// learns who leads, and each change, without polling.
func ExampleObserve() {
	srv, err := zktest.StartServer() // or your ensemble's connect string
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Connect(ctx, srv.ConnectString())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	const path = "/services/billing/leader"
	leaders, err := leader.Observe(ctx, client, path)
	if err != nil {
		log.Fatal(err)
	}
	show := func() {
		if p := <-leaders; p.Leader {
			fmt.Println("leader is", p.ID)
		} else {
			fmt.Println("no leader")
		}
	}
	show()

	latch, err := leader.NewLatch(client, path, "billing-1")
	if err != nil {
		log.Fatal(err)
	}
	if err := latch.Start(ctx); err != nil {
		log.Fatal(err)
	}
	show()
	if err := latch.Close(); err != nil {
		log.Fatal(err)
	}
	show()
	// Output:
	// no leader
	// leader is billing-1
	// no leader
}
