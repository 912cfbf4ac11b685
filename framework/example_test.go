package framework_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// Connect, then write and read a node with an optimistic version check.
func Example() {
	srv, err := zktest.StartServer() // or your ensemble's connect string
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Connect(ctx, srv.ConnectString(),
		// How long the server keeps this client's session (and its ephemeral nodes) after
		// it goes silent: others wait up to this long for a crashed holder's lock.
		framework.WithSessionTimeout(15*time.Second),
		framework.WithRetryPolicy(retry.Default()), // the default, stated
	)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	if _, err := client.Create(ctx, "/config", nil); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Create(ctx, "/config/db", []byte("primary")); err != nil {
		log.Fatal(err)
	}
	data, stat, err := client.GetData(ctx, "/config/db")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (version %d)\n", data, stat.Version)

	// A write that names the version it read fails if someone wrote in between.
	if _, err := client.SetData(ctx, "/config/db", []byte("replica"), stat.Version); err != nil {
		log.Fatal(err)
	}
	_, err = client.SetData(ctx, "/config/db", []byte("stale"), stat.Version)
	fmt.Println("stale write refused:", errors.Is(err, framework.ErrBadVersion))

	kids, _, err := client.Children(ctx, "/config")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("children of /config:", kids)
	if err := client.Delete(ctx, "/config", framework.WithChildren()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// primary (version 0)
	// stale write refused: true
	// children of /config: [db]
}

// An ephemeral node lives as long as the session that created it: the usual way to
// register a live process.
func ExampleClient_Create_ephemeral() {
	srv, err := zktest.StartServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	worker, err := framework.Connect(ctx, srv.ConnectString())
	if err != nil {
		log.Fatal(err)
	}
	if _, err := worker.Create(ctx, "/workers/w1", nil, framework.WithParents(), framework.WithMode(framework.Ephemeral)); err != nil {
		log.Fatal(err)
	}
	observer, err := framework.Connect(ctx, srv.ConnectString())
	if err != nil {
		log.Fatal(err)
	}
	defer observer.Close()
	kids, _, err := observer.Children(ctx, "/workers")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("live workers:", kids)

	// Watch the node, then end the worker's session: the server deletes its ephemeral nodes.
	stat, gone, err := observer.ExistsW(ctx, "/workers/w1")
	if err != nil {
		log.Fatal(err)
	}
	worker.Close()
	if stat != nil {
		select {
		case <-gone.Done():
		case <-ctx.Done():
			log.Fatal(ctx.Err())
		}
	}
	kids, _, err = observer.Children(ctx, "/workers")
	if err != nil && !errors.Is(err, framework.ErrNoNode) {
		log.Fatal(err)
	}
	fmt.Println("after the worker's session ended:", kids)
	// Output:
	// live workers: [w1]
	// after the worker's session ended: []
}
