// Command barrier shows package recipes/barrier (Curator's DistributedBarrier): a
// coordinator sets a barrier, workers in other clients wait on it, and removing it once
// the input is ready releases them all at once.
//
//	go run ./examples/barrier                     # on an embedded ZooKeeper
//	go run ./examples/barrier -connect host:2181  # on yours (uses /examples/barrier)
//
// From a shell: `zkcurator barrier set|wait|remove <path>`.
package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/examples/internal/demo"
	"github.com/zoocurator/zoocurator/recipes/barrier"
)

const (
	gatePath = "/examples/barrier/nightly-start"
	workers  = 3
)

func main() { demo.Main(run) }

func run(ctx context.Context, connect string, w io.Writer) error {
	out := demo.NewPrinter(w)
	coord, err := demo.Connect(ctx, connect)
	if err != nil {
		return err
	}
	defer coord.Close()
	gate, err := barrier.New(coord, gatePath)
	if err != nil {
		return err
	}
	if err := gate.Set(ctx); err != nil { // before any worker starts
		return err
	}
	out.Printf("coordinator: barrier set")

	var started atomic.Int32
	results := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		c, err := demo.Connect(ctx, connect) // each worker as its own process
		if err != nil {
			return err
		}
		defer c.Close()
		b, err := barrier.New(c, gatePath)
		if err != nil {
			return err
		}
		wg.Go(func() {
			if results[i] = b.Wait(ctx); results[i] == nil {
				started.Add(1)
			}
		})
	}
	out.Printf("%d workers wait at the barrier", workers)

	time.Sleep(500 * time.Millisecond) // the coordinator prepares the input
	out.Printf("coordinator: input ready; workers started so far: %d", started.Load())
	if err := gate.Remove(ctx); err != nil {
		return err
	}
	out.Printf("coordinator: barrier removed")
	wg.Wait()
	for i, err := range results {
		if err != nil {
			return fmt.Errorf("worker %d: %w", i, err)
		}
		out.Printf("worker %d: released, starts its work", i)
	}
	return nil
}
