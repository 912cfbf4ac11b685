package doublebarrier_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// memberRE is the name of a member node, Go's or Curator's: a bare UUID.
var memberRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

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

func newMember(t testing.TB, c *framework.Client, path string, qty int) *doublebarrier.DoubleBarrier {
	t.Helper()
	d, err := doublebarrier.New(c, path, qty)
	require.NoError(t, err)
	return d
}

// tctx returns a context that ends after d or at the test's end.
func tctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// goDo runs f on a goroutine and reports its result on the returned channel.
func goDo(ctx context.Context, f func(context.Context) error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f(ctx) }()
	return ch
}

// result fails the test unless ch delivers within d, and returns what it delivered.
func result(t testing.TB, ch <-chan error, d time.Duration, what string) error {
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

// children lists path's children (sorted) straight from the server.
func children(t testing.TB, connect, path string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kids, err := zktest.Children(ctx, connect, path)
	require.NoError(t, err)
	return kids
}

// waitChildren waits until path has n children (ready included).
func waitChildren(t testing.TB, connect, path string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		kids, err := zktest.Children(ctx, connect, path)
		return err == nil && len(kids) == n
	}, 20*time.Second, 20*time.Millisecond, "waiting for %d children of %s", n, path)
}

// assertNoMembers waits for the clients' guaranteed deletes, then checks that no member
// node is left under path (ready is allowed only if allowReady).
func assertNoMembers(t testing.TB, connect, path string, clients ...*framework.Client) {
	t.Helper()
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := c.WaitGuaranteedDeletes(ctx)
		cancel()
		if err != nil && !assert.ErrorIs(t, err, framework.ErrClosed) {
			return
		}
	}
	var kids []string
	if !assert.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		k, err := zktest.Children(ctx, connect, path)
		kids = k
		return err == nil && len(k) == 0
	}, 10*time.Second, 50*time.Millisecond) {
		t.Errorf("nodes left under %s: %v", path, kids)
	}
}
