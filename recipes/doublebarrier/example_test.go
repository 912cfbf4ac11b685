package doublebarrier_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// Three workers of a batch job enter a double barrier, so that none starts before all
// are there; each does its part; they leave together, so that none moves on before all
// are done.
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

	const workers = 3
	parts := make([]string, workers)
	var wg sync.WaitGroup
	for i := range parts {
		wg.Add(1)
		go func() { // in real life: another process, with its own client
			defer wg.Done()
			// One value per member.
			member, err := doublebarrier.New(client, "/jobs/nightly/workers", workers)
			if err != nil {
				parts[i] = err.Error()
				return
			}
			if err := member.Enter(ctx); err != nil { // until all three are in
				parts[i] = err.Error()
				return
			}
			parts[i] = fmt.Sprintf("worker %d did part %d of %d", i, i+1, workers)
			// Leave with a context of its own: a Leave that gives up leaves nothing behind.
			if err := member.Leave(ctx); err != nil { // until all three are out
				parts[i] = err.Error()
			}
		}()
	}
	wg.Wait()
	for _, p := range parts {
		fmt.Println(p)
	}
	// Output:
	// worker 0 did part 1 of 3
	// worker 1 did part 2 of 3
	// worker 2 did part 3 of 3
}
