package barrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// newClient connects a client (session 4 s unless opts say otherwise) and closes it at
// cleanup.
func newClient(t testing.TB, connect string, opts ...framework.Option) *framework.Client {
	t.Helper()
	p, err := retry.NewBoundedExponentialBackoff(20*time.Millisecond, 200*time.Millisecond, 10)
	require.NoError(t, err)
	all := append([]framework.Option{
		framework.WithSessionTimeout(4 * time.Second),
		framework.WithConnectionTimeout(3 * time.Second),
		framework.WithRetryPolicy(p),
	}, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Connect(ctx, connect, all...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newBarrier(t testing.TB, c *framework.Client, path string) *barrier.Barrier {
	t.Helper()
	b, err := barrier.New(c, path)
	require.NoError(t, err)
	return b
}

// tctx returns a context that ends after d or at the test's end.
func tctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// goWait runs b.Wait on a goroutine and reports its result on the returned channel.
func goWait(ctx context.Context, b *barrier.Barrier) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- b.Wait(ctx) }()
	return ch
}

// waitResult fails the test unless ch delivers within d, and returns what it delivered.
func waitResult(t testing.TB, ch <-chan error, d time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("%s: no result after %v", what, d)
		return nil
	}
}

// notYet fails the test if ch delivers within d.
func notYet(t testing.TB, ch <-chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned early: %v", what, err)
	case <-time.After(d):
	}
}

// watchCount returns the number of watches the server holds.
func watchCount(t testing.TB, srv *zktest.Server) int64 {
	t.Helper()
	n, err := zktest.MntrInt(srv.Addr(), "zk_watch_count")
	require.NoError(t, err)
	return n
}

// waitWatches waits until the server holds at least n watches.
func waitWatches(t testing.TB, srv *zktest.Server, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return watchCount(t, srv) >= n }, 15*time.Second, 20*time.Millisecond,
		"waiting for %d watches on the server", n)
}

// requireGone checks, straight on the server, that path does not exist.
func requireGone(t testing.TB, connect, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := zktest.Dial(ctx, connect, 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	ok, _, err := conn.Exists(path)
	require.NoError(t, err)
	require.False(t, ok, "%s is still there", path)
}

// states records the client's connection states on a channel.
func states(c *framework.Client) <-chan framework.State {
	ch := make(chan framework.State, 64)
	c.AddListener(func(s framework.State) {
		select {
		case ch <- s:
		default:
		}
	})
	return ch
}

func waitState(t testing.TB, ch <-chan framework.State, want framework.State, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case s := <-ch:
			if s == want {
				return
			}
		case <-timeout:
			t.Fatalf("state %v not reported within %v", want, d)
		}
	}
}
