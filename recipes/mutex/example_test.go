package mutex_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

func Example() {
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

	m, err := mutex.New(client, "/locks/orders")
	if err != nil {
		log.Fatal(err)
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.WithoutCancel(ctx))

	// Work under the lock with a context that ends if the lock may be lost.
	work, stop := lease.Context(ctx)
	defer stop()
	select {
	case <-work.Done():
		fmt.Println("lock lost: stop writing")
	default:
		// Pass the token to the resource you protect: it rejects writes with an older one.
		tok, err := lease.Token(work)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("holding the lock; fencing token > 0:", tok > 0)
	}
	// Output: holding the lock; fencing token > 0: true
}
