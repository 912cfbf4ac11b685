package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// Two leases on a database that allows two batch connections: the third taker finds
// none free until one is returned.
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

	// Every participant must use the same maximum, as with Curator.
	sem, err := semaphore.New(client, "/semaphores/db-batch", 2)
	if err != nil {
		log.Fatal(err)
	}
	a, err := sem.Acquire(ctx) // blocks while every lease is taken
	if err != nil {
		log.Fatal(err)
	}
	b, err := sem.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, err = sem.TryAcquire(ctx)
	fmt.Println("third lease:", errors.Is(err, semaphore.ErrNoLeases))

	if err := a.Release(ctx); err != nil {
		log.Fatal(err)
	}
	c, err := sem.TryAcquire(ctx)
	fmt.Println("after one is returned:", err == nil)
	if err := semaphore.ReturnAll(ctx, b, c); err != nil {
		log.Fatal(err)
	}
	// Output:
	// third lease: true
	// after one is returned: true
}

// A semaphore mutex (Curator's InterProcessSemaphoreMutex) is the semaphore with one
// lease: a lock.
func ExampleNewMutex() {
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

	m, err := semaphore.NewMutex(client, "/locks/report")
	if err != nil {
		log.Fatal(err)
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, err = m.TryAcquire(ctx)
	fmt.Println("taken while held:", errors.Is(err, semaphore.ErrNoLeases))
	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("released")
	// Output:
	// taken while held: true
	// released
}
