package barrier_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// A coordinator holds three workers at a barrier until their input is ready, then
// releases them all at once.
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

	// The coordinator sets the barrier before any worker starts.
	gate, err := barrier.New(client, "/jobs/nightly/start")
	if err != nil {
		log.Fatal(err)
	}
	if err := gate.Set(ctx); err != nil {
		log.Fatal(err)
	}

	var wg sync.WaitGroup
	results := make([]string, 3)
	for i := range results {
		wg.Add(1)
		go func() { // in real life: another process, with its own client
			defer wg.Done()
			b, err := barrier.New(client, "/jobs/nightly/start")
			if err != nil {
				results[i] = err.Error()
				return
			}
			if err := b.Wait(ctx); err != nil { // blocks until the coordinator removes it
				results[i] = err.Error()
				return
			}
			results[i] = fmt.Sprintf("worker %d started", i)
		}()
	}

	// ... prepare the input, then release the workers.
	if err := gate.Remove(ctx); err != nil {
		log.Fatal(err)
	}
	wg.Wait()
	for _, r := range results {
		fmt.Println(r)
	}
	// Output:
	// worker 0 started
	// worker 1 started
	// worker 2 started
}
