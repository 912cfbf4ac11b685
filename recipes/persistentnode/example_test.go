package persistentnode_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// A service registers its address in an ephemeral node that stays while it runs, even
// when an operator deletes it by mistake or the session expires.
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

	node, err := persistentnode.New(client, "/services/orders/instance", []byte("10.0.0.7:8080"),
		persistentnode.WithMode(framework.EphemeralSequential), persistentnode.WithProtection())
	if err != nil {
		log.Fatal(err)
	}
	created := make(chan persistentnode.Created, 4)
	node.AddListener(func(c persistentnode.Created) { created <- c })
	if err := node.Start(); err != nil {
		log.Fatal(err)
	}
	defer node.Close()
	if err := node.WaitForInitialCreate(ctx); err != nil {
		log.Fatal(err)
	}
	next := func() persistentnode.Created {
		select {
		case c := <-created:
			return c
		case <-ctx.Done():
			log.Fatal(ctx.Err())
			return persistentnode.Created{}
		}
	}
	first := next()
	fmt.Println("registered:", framework.IsProtectedName(framework.NodeName(node.ActualPath())))

	// Someone deletes it: it is back, at the same path.
	if err := client.Delete(ctx, node.ActualPath()); err != nil {
		log.Fatal(err)
	}
	again := next()
	fmt.Println("re-created:", again.Recreated, "same path:", again.Path == first.Path)
	data, _, _ := client.GetData(ctx, again.Path)
	fmt.Println("data:", string(data))
	// Output:
	// registered: true
	// re-created: true same path: true
	// data: 10.0.0.7:8080
}

// A TTL node stays while its owner runs, and the server removes it some time after the
// owner stops, even if it never got to delete it.
func ExampleNewTTL() {
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

	node, err := persistentnode.NewTTL(client, "/jobs/nightly/owner", time.Minute, []byte("host-7"))
	if err != nil {
		log.Fatal(err)
	}
	if err := node.Start(); err != nil {
		log.Fatal(err)
	}
	defer node.Close()
	if err := node.WaitForInitialCreate(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(node.ActualPath(), "touched through", node.ChildPath())
	// Output:
	// /jobs/nightly/owner touched through /jobs/nightly/owner/touch
}
