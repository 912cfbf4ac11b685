package sharedcount_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

// A fleet agrees on how many workers to run. One operator raises the number only if
// nobody changed it since they looked.
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

	workers, err := sharedcount.New(client, "/fleet/workers", 3) // 3 unless someone set it
	if err != nil {
		log.Fatal(err)
	}
	if err := workers.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer workers.Close()

	seen, _ := workers.Get()
	fmt.Println("workers:", seen.Value)
	if err := workers.TrySet(ctx, seen, seen.Value+2); err != nil {
		log.Fatal(err)
	}
	now, _ := workers.Get()
	fmt.Println("workers:", now.Value)

	// A second TrySet from the old reading is refused: someone changed it since.
	err = workers.TrySet(ctx, seen, 10)
	fmt.Println("conflict:", errors.Is(err, sharedcount.ErrConflict))
	// Output:
	// workers: 3
	// workers: 5
	// conflict: true
}
