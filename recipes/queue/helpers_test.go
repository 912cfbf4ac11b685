package queue_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/zktest"
)

// collector is a handler that records what it got.
type collector struct {
	mu  sync.Mutex
	got []string
}

func (c *collector) handle(_ context.Context, s string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, s)
	return nil
}

func (c *collector) items() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

// consumeN calls ConsumeOne n times on q and returns the items in the order taken.
func consumeN(t *testing.T, ctx context.Context, consumeOne func(context.Context, queue.Handler[string]) error, n int) []string {
	t.Helper()
	var c collector
	for range n {
		require.NoError(t, consumeOne(ctx, c.handle))
	}
	return c.items()
}

// The tests share one server (each on paths of its own): starting a ZooKeeper per test
// would double the package's run time.
var (
	srvOnce sync.Once
	srv     *zktest.Server
	srvErr  error
)

func server(t *testing.T) *zktest.Server {
	t.Helper()
	srvOnce.Do(func() { srv, srvErr = zktest.StartServer() })
	require.NoError(t, srvErr)
	return srv
}

func TestMain(m *testing.M) {
	code := m.Run()
	if srv != nil {
		_ = srv.Close()
	}
	os.Exit(code)
}

// runs numbers the paths of tests that run more than once in one process (-count=N):
// the server is the package's, and what a run leaves must not meet the next run.
var runs atomic.Int64

// uniq returns base with a suffix no other call in this process returns.
func uniq(base string) string { return fmt.Sprintf("%s-%d", base, runs.Add(1)) }
