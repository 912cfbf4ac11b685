package groupmember_test

import (
	"context"
	"fmt"
	"log"
	"maps"
	"slices"
	"time"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/zktest"
)

// Two workers join a group, each with its address as payload; each sees the other.
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

	var members []*groupmember.Member
	for _, id := range []string{"worker-1", "worker-2"} {
		m, err := groupmember.New(client, "/groups/indexers", id, []byte(id+".example:9000"))
		if err != nil {
			log.Fatal(err)
		}
		if err := m.Start(ctx); err != nil {
			log.Fatal(err)
		}
		defer m.Close()
		if err := m.WaitForInitialCreate(ctx); err != nil {
			log.Fatal(err)
		}
		members = append(members, m)
	}
	// worker-1's cache hears worker-2 join, unless it read it already when it started.
	changed := make(chan struct{}, 1)
	members[0].AddListener(func(cache.Event) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	for {
		cur, err := members[0].CurrentMembers()
		if err != nil {
			log.Fatal(err)
		}
		if len(cur) == 2 {
			for _, id := range slices.Sorted(maps.Keys(cur)) {
				fmt.Println(id, string(cur[id]))
			}
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			log.Fatal(ctx.Err())
		}
	}
	// Output:
	// worker-1 worker-1.example:9000
	// worker-2 worker-2.example:9000
}
