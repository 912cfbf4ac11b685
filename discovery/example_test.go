package discovery_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

// Zone is a payload; JavaClass lets a Java service using Curator read it as its class.
type Zone struct {
	Name string `json:"name"`
}

func (Zone) JavaClass() string { return "com.example.Zone" }

// A service registers an instance of itself; a client finds it through a provider.
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

	reg, err := discovery.New[Zone](client, "/services")
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close() // unregisters
	inst, err := discovery.NewInstance("orders", Zone{Name: "eu-west"},
		discovery.WithAddress("10.0.0.7"), discovery.WithPort(8080),
		discovery.WithURISpec("{scheme}://{address}:{port}/api"))
	if err != nil {
		log.Fatal(err)
	}
	if err := reg.Register(ctx, inst); err != nil { // an ephemeral node /services/orders/<id>
		log.Fatal(err)
	}

	provider, err := discovery.NewProvider(reg, "orders") // round robin over a cache
	if err != nil {
		log.Fatal(err)
	}
	defer provider.Close()
	if err := provider.Start(ctx); err != nil {
		log.Fatal(err)
	}
	found, err := provider.GetInstance()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(found.BuildURI(nil), found.Payload.Name)
	// Output: http://10.0.0.7:8080/api eu-west
}
