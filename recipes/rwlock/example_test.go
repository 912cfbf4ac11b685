package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/zktest"
)

// Readers share the lock; a writer has it alone.
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

	rw, err := rwlock.New(client, "/locks/catalog")
	if err != nil {
		log.Fatal(err)
	}
	r1, err := rw.ReadLock().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	r2, err := rw.ReadLock().Acquire(ctx) // another reader gets in beside the first
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("two readers hold the lock")

	_, err = rw.WriteLock().TryAcquire(ctx)
	fmt.Println("a writer while readers hold it:", errors.Is(err, rwlock.ErrLocked))

	for _, r := range []*rwlock.Lease{r1, r2} {
		if err := r.Release(ctx); err != nil {
			log.Fatal(err)
		}
	}
	w, err := rw.WriteLock().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the writer holds it alone:", w.IsWrite())
	if err := w.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// two readers hold the lock
	// a writer while readers hold it: true
	// the writer holds it alone: true
}
