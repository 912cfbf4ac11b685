package framework_test

import (
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/retry"
)

// A listener that should not react to every flip of a flapping network: after the first
// Suspended it hears nothing until the connection has been back at one of the breaker's
// checks (every 5 s, for at most a minute), then one Reconnected; a Lost always comes
// through at once.
func ExampleClient_AddCircuitBreakingListener() {
	client, err := framework.New("127.0.0.1:2181")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	breaker, err := retry.NewUntilElapsed(time.Minute, 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	remove, err := client.AddCircuitBreakingListener(breaker, func(s framework.State) {
		fmt.Println("connection:", s)
	})
	if err != nil {
		log.Fatal(err)
	}
	defer remove()
}
