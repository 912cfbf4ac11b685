package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/zktest"
)

// A producer queues jobs with priorities; a consumer with a lock path takes them, lowest
// priority value first, and each job's node goes only once its handler returned.
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

	jobs, err := queue.NewPriority(client, "/jobs/queue", queue.String{}, queue.WithLockPath("/jobs/locks"))
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range []struct {
		name string
		prio int32
	}{{"rebuild index", 10}, {"page on-call", -5}, {"send report", 10}} {
		if _, err := jobs.Put(ctx, j.name, j.prio); err != nil {
			log.Fatal(err)
		}
	}
	for range 3 { // in real life: Consume(ctx, handler) in a worker, until shutdown
		err := jobs.ConsumeOne(ctx, func(_ context.Context, job string) error {
			fmt.Println("doing:", job)
			return nil // an error would requeue the job
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// doing: page on-call
	// doing: rebuild index
	// doing: send report
}

// A SimpleQueue is Curator's SimpleDistributedQueue: Offer and a blocking Take.
func ExampleSimpleQueue() {
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

	q, err := queue.NewSimple(client, "/mail/outbox", queue.Bytes{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := q.Offer(ctx, []byte("hello")); err != nil {
		log.Fatal(err)
	}
	msg, err := q.Take(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", msg)
	// Output: hello
}

// Jobs as JSON (JSON[Job]{}); a job that fails three times in a row goes to a dead-letter
// queue instead of being requeued forever, and the other jobs go on.
func ExampleWithDeadLetterPath() {
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

	type Job struct {
		ID   int    `json:"id"`
		Task string `json:"task"`
	}
	jobs, err := queue.New(client, "/jobs/queue", queue.JSON[Job]{},
		queue.WithLockPath("/jobs/locks"),
		queue.WithMaxAttempts(3),
		queue.WithDeadLetterPath("/jobs/dead"))
	if err != nil {
		log.Fatal(err)
	}
	for i, task := range []string{"resize", "explode", "archive"} {
		if _, err := jobs.Put(ctx, Job{ID: i, Task: task}); err != nil {
			log.Fatal(err)
		}
	}
	for range 5 { // in real life: Consume(ctx, handler), with WithErrorListener to log failures
		err := jobs.ConsumeOne(ctx, func(_ context.Context, j Job) error {
			if j.Task == "explode" {
				return fmt.Errorf("job %d: cannot %s", j.ID, j.Task)
			}
			fmt.Println("done:", j.Task)
			return nil
		})
		var he *queue.HandlerError
		switch {
		case errors.Is(err, queue.ErrAttemptsExhausted) && errors.As(err, &he):
			fmt.Printf("given up after %d attempts: %v\n", he.Attempts, he.Err)
		case errors.As(err, &he):
			fmt.Println("requeued:", he.Err)
		case err != nil:
			log.Fatal(err)
		}
	}
	dead, err := queue.New(client, "/jobs/dead", queue.JSON[Job]{})
	if err != nil {
		log.Fatal(err)
	}
	err = dead.ConsumeOne(ctx, func(_ context.Context, j Job) error {
		fmt.Printf("dead letter: %+v\n", j)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// done: resize
	// requeued: job 1: cannot explode
	// done: archive
	// requeued: job 1: cannot explode
	// given up after 3 attempts: job 1: cannot explode
	// dead letter: {ID:1 Task:explode}
}
