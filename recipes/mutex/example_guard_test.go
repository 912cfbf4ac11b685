package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// A lock holder that writes to ZooKeeper itself fences its writes with the lease's
// guard: the server applies them only while the lock node exists, so a holder that lost
// the lock (released it, or its session expired while it was paused) cannot overwrite
// what the next holder wrote.
func ExampleLease_Guard() {
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

	m, err := mutex.New(client, "/locks/batches")
	if err != nil {
		log.Fatal(err)
	}
	counter, err := atomic.NewLong(client, "/counters/batches")
	if err != nil {
		log.Fatal(err)
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	guard, err := lease.Guard(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fenced := framework.WithGuard(ctx, guard) // writes under fenced are guarded

	r, err := counter.Increment(fenced)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("while held:", r.Post)

	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = counter.Increment(fenced)
	fmt.Println("after release, fenced:", errors.Is(err, framework.ErrFenced))
	// Output:
	// while held: 1
	// after release, fenced: true
}
