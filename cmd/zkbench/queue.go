package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/recipes/queue"
)

// queueItem is what the queue workloads put: 16 bytes.
var queueItem = []byte("zkbench-item-16b")

// queuePrefillWorkers is how many goroutines fill queue-take's queue before the start.
const queuePrefillWorkers = 16

// prepareQueuePut: each worker has its own queue.Queue on the base path (Curator's
// defaults: no lock path, no bound). Per op: Put of one 16-byte item (measured). The
// items stay until the clean-up.
func prepareQueuePut(_ context.Context, e *env) (func(ci, gi int) (op, error), error) {
	return func(ci, gi int) (op, error) {
		q, err := queue.New(e.clients[ci], e.base, queue.Bytes{})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (time.Duration, error) {
			t0 := time.Now()
			_, err := q.Put(ctx, queueItem)
			return time.Since(t0), err
		}, nil
	}, nil
}

// prepareQueueTake fills the base path with one item per op of the run (before the start,
// not counted), then gives each worker its own queue.Queue (no lock path, as Curator's
// default). Per op: ConsumeOne, which lists the queue, reads its first free item and
// deletes it (measured). The queue shrinks from the run's ops to 0.
func prepareQueueTake(ctx context.Context, e *env) (func(ci, gi int) (op, error), error) {
	workers := e.cfg.clients * e.cfg.perClient
	total := e.cfg.ops / workers * workers
	filler, err := queue.New(e.clients[0], e.base, queue.Bytes{})
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, queuePrefillWorkers)
	for w := range queuePrefillWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += queuePrefillWorkers {
				if _, err := filler.Put(ctx, queueItem); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("queue-take: filling the queue: %w", err)
	}
	return func(ci, gi int) (op, error) {
		q, err := queue.New(e.clients[ci], e.base, queue.Bytes{})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (time.Duration, error) {
			t0 := time.Now()
			err := q.ConsumeOne(ctx, func(context.Context, []byte) error { return nil })
			return time.Since(t0), err
		}, nil
	}, nil
}
