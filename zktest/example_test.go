package zktest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

// A program without a testing.T (an example, a demo, a benchmark) starts a server with
// StartServer and closes it; a test calls zktest.NewServer(t), which closes it at the
// test's end.
func ExampleStartServer() {
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
	if _, err := client.Create(ctx, "/jobs", nil); err != nil {
		log.Fatal(err)
	}

	// Children looks at the server directly, as a test checks what a recipe left behind.
	kids, err := zktest.Children(ctx, srv.ConnectString(), "/")
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(kids)
	fmt.Println(kids)
	// Output: [jobs zookeeper]
}

// A proxy between a client and its server injects network faults: here it stalls the
// client's traffic, so a call with a deadline gives up, then heals it.
func ExampleStartProxy() {
	srv, err := zktest.StartServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	proxy, err := zktest.StartProxy(srv.ConnectString())
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Connect(ctx, proxy.ConnectString(), framework.WithSessionTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	proxy.Stall() // the client hears nothing from now on
	sctx, scancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = client.Exists(sctx, "/")
	scancel()
	fmt.Println("while stalled:", errors.Is(err, context.DeadlineExceeded))

	proxy.Heal()
	_, err = client.Exists(ctx, "/")
	fmt.Println("healed:", err == nil)
	// Output:
	// while stalled: true
	// healed: true
}

// ExpireSession ends a client's session on the server at once, as Curator's KillSession:
// the session's ephemeral nodes are gone when it returns, and the client, told that its
// session expired, goes on with a new one.
func ExampleServer_ExpireSession() {
	srv, err := zktest.StartServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := framework.Connect(ctx, srv.ConnectString())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	lost := make(chan struct{}, 1)
	client.AddListener(func(s framework.State) {
		if s == framework.Lost {
			select {
			case lost <- struct{}{}:
			default:
			}
		}
	})
	if _, err := client.Create(ctx, "/worker", nil, framework.WithMode(framework.Ephemeral)); err != nil {
		log.Fatal(err)
	}
	old := client.SessionID()

	if err := srv.ExpireSession(ctx, old); err != nil {
		log.Fatal(err)
	}
	kids, err := zktest.Children(ctx, srv.ConnectString(), "/")
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(kids)
	fmt.Println("after expiry:", kids)
	select {
	case <-lost:
		fmt.Println("the client reports Lost")
	case <-ctx.Done():
		log.Fatal(ctx.Err())
	}
	if err := client.BlockUntilConnected(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("new session:", client.SessionID() != old)
	// Output:
	// after expiry: [zookeeper]
	// the client reports Lost
	// new session: true
}
