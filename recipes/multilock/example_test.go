package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// A transfer locks both accounts as one: all or none.
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

	// Take locks in the same order everywhere to avoid deadlocks between multi-locks.
	both, err := multilock.NewFromPaths(client, "/locks/accounts/alice", "/locks/accounts/bob")
	if err != nil {
		log.Fatal(err)
	}
	lease, err := both.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locks held:", len(lease.Parts()))

	// Meanwhile, a single account cannot be locked on its own.
	bob, err := mutex.New(client, "/locks/accounts/bob")
	if err != nil {
		log.Fatal(err)
	}
	_, err = bob.TryAcquire(ctx)
	fmt.Println("bob alone is locked:", errors.Is(err, mutex.ErrLocked))

	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// locks held: 2
	// bob alone is locked: true
}

// Any mix of locks can be taken as one: here a mutex and a read lock, through From.
func ExampleFrom() {
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

	job, err := mutex.New(client, "/locks/nightly-job")
	if err != nil {
		log.Fatal(err)
	}
	other, err := mutex.New(client, "/locks/exports")
	if err != nil {
		log.Fatal(err)
	}
	ml, err := multilock.New(multilock.From(job.Acquire), multilock.From(other.Acquire))
	if err != nil {
		log.Fatal(err)
	}
	lease, err := ml.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("parts:", len(lease.Parts()))
	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: parts: 2
}
