package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/retry"
)

func ExampleDo() {
	// Up to 3 retries, 10 ms apart.
	policy, err := retry.NewNTimes(3, 10*time.Millisecond)
	if err != nil {
		panic(err)
	}
	attempts := 0
	err = retry.Do(context.Background(), policy, func(ctx context.Context) error {
		attempts++
		if attempts < 3 {
			return zk.ErrConnectionClosed // retryable: try again
		}
		return nil
	}, retry.WithNotify(func(err error, sleep time.Duration) {
		fmt.Printf("attempt failed: %v; retrying in %v\n", err, sleep)
	}))
	fmt.Println("attempts:", attempts, "error:", err)
	// Output:
	// attempt failed: zk: connection closed; retrying in 10ms
	// attempt failed: zk: connection closed; retrying in 10ms
	// attempts: 3 error: <nil>
}

func ExampleDo_givingUp() {
	policy, err := retry.NewOneTime(time.Millisecond)
	if err != nil {
		panic(err)
	}
	err = retry.Do(context.Background(), policy, func(ctx context.Context) error {
		return fmt.Errorf("get /config: %w", zk.ErrNoServer)
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, retry.ErrRetriesExhausted), errors.Is(err, zk.ErrNoServer))

	// Errors that a retry cannot fix come back at once, as they are.
	err = retry.Do(context.Background(), policy, func(ctx context.Context) error {
		return zk.ErrNoNode
	})
	fmt.Println(err)
	// Output:
	// retry: gave up after 1 retries: get /config: zk: could not connect to a server
	// true true
	// zk: node does not exist
}

func ExampleSessionFailed() {
	policy := retry.SessionFailed(retry.Default())
	attempts := 0
	err := retry.Do(context.Background(), policy, func(ctx context.Context) error {
		attempts++
		return zk.ErrSessionExpired
	})
	fmt.Println(attempts, err)
	// Output:
	// 1 zk: session has been expired by the server
}

func ExampleToBackOff() {
	policy, err := retry.NewNTimes(2, time.Millisecond)
	if err != nil {
		panic(err)
	}
	attempts := 0
	err = backoff.Retry(func() error {
		attempts++
		return errors.New("not yet")
	}, retry.ToBackOff(policy))
	fmt.Println(attempts, err)
	// Output:
	// 3 not yet
}

func ExampleFromBackOff() {
	// Any backoff/v4 policy can drive Do.
	policy := retry.FromBackOff(backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Millisecond), 2))
	attempts := 0
	err := retry.Do(context.Background(), policy, func(ctx context.Context) error {
		attempts++
		return retry.ErrOperationTimeout
	})
	fmt.Println(attempts, errors.Is(err, retry.ErrOperationTimeout))
	// Output:
	// 3 true
}
