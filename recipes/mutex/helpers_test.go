package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

func newMutex(t testing.TB, c *framework.Client, path string, opts ...mutex.Option) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path, opts...)
	require.NoError(t, err)
	return m
}

// acquired is what an Acquire on a goroutine returned.
type acquired struct {
	l   *mutex.Lease
	err error
}

// goAcquire acquires m on a goroutine and reports on the returned channel.
func goAcquire(ctx context.Context, m *mutex.Mutex) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := m.Acquire(ctx)
		ch <- acquired{l, err}
	}()
	return ch
}

// assertNoChildren waits for the clients' guaranteed deletes, then checks that nothing
// is left under path.
func assertNoChildren(t testing.TB, connect, path string, clients ...*framework.Client) {
	t.Helper()
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		require.NoError(t, c.WaitGuaranteedDeletes(ctx))
		cancel()
	}
	empty := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kids, err := zktest.Children(ctx, connect, path)
		return err == nil && len(kids) == 0
	}
	if !assert.Eventually(t, empty, 10*time.Second, 50*time.Millisecond) {
		require.Empty(t, testutil.Children(t, connect, path), "children left under %s", path)
	}
}
