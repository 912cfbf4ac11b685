package cache_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

// A service follows its configuration subtree: it reads settings from the cache (no
// round trip to ZooKeeper) and reacts to changes as they are made.
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
	if _, err := client.Create(ctx, "/config/orders/timeout", []byte("5s"), framework.WithParents()); err != nil {
		log.Fatal(err)
	}

	config, err := cache.NewTreeCache(client, "/config/orders", cache.WithStartMode(cache.BuildInitialCache))
	if err != nil {
		log.Fatal(err)
	}
	changes := make(chan cache.Event, 16)
	config.AddListener(func(ev cache.Event) {
		switch ev.Type {
		case cache.TreeNodeAdded, cache.TreeNodeUpdated, cache.TreeNodeRemoved:
			changes <- ev // the listener runs on the cache's goroutine: hand work off
		}
	})
	if err := config.Start(ctx); err != nil { // returns once the subtree is read
		log.Fatal(err)
	}
	defer config.Close()

	timeout, _ := config.Get("/config/orders/timeout")
	fmt.Printf("timeout = %s\n", timeout.Data)

	// Somebody (here: we) changes the configuration.
	if _, err := client.SetData(ctx, "/config/orders/timeout", []byte("10s"), -1); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Create(ctx, "/config/orders/retries", []byte("3")); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		select {
		case ev := <-changes:
			fmt.Printf("%v = %s\n", ev, ev.Data.Data)
		case <-ctx.Done():
			log.Fatal(ctx.Err())
		}
	}
	// Output:
	// timeout = 5s
	// NODE_UPDATED /config/orders/timeout = 10s
	// NODE_ADDED /config/orders/retries = 3
}

// Curator 5's CuratorCache API: listeners built per kind of event, reads from the cache.
func ExampleCuratorCache() {
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
	if _, err := client.Create(ctx, "/services/orders", []byte("v1"), framework.WithParents()); err != nil {
		log.Fatal(err)
	}

	services, err := cache.NewCuratorCache(client, "/services")
	if err != nil {
		log.Fatal(err)
	}
	ready, changed := make(chan struct{}), make(chan string, 16)
	services.AddListener(cache.NewCuratorCacheListener().
		ForCreatesAndChanges(func(old *cache.ChildData, n cache.ChildData) {
			changed <- fmt.Sprintf("%s = %s", n.Path, n.Data)
		}).
		ForInitialized(func() { close(ready) }).
		AfterInitialized(). // only what changes after Start
		Build())
	if err := services.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer services.Close()
	<-ready
	for n := range services.All() {
		fmt.Printf("cached %s %q\n", n.Path, n.Data)
	}
	if _, err := client.SetData(ctx, "/services/orders", []byte("v2"), -1); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-changed)
	// Output:
	// cached /services ""
	// cached /services/orders "v1"
	// /services/orders = v2
}
