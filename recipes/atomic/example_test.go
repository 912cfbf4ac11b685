package atomic_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/zktest"
)

// Hand out order numbers from a counter that Go and Curator processes share.
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

	orders, err := atomic.NewLong(client, "/counters/orders",
		atomic.WithPromotedToLock("/counters/orders-lock", nil, 5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := orders.Initialize(ctx, 1000); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		r, err := orders.Increment(ctx)
		switch {
		case errors.Is(err, atomic.ErrUnknownOutcome):
			// The connection went while the write was in flight: number r.Post may or
			// may not be taken. Do not reuse it; do not increment again blindly.
			log.Printf("order number %d: outcome unknown", r.Post)
		case err != nil:
			log.Fatal(err)
		case !r.Succeeded:
			log.Print("too much contention: try again later")
		default:
			fmt.Println("order", r.Post)
		}
	}
	// Output:
	// order 1001
	// order 1002
	// order 1003
}
