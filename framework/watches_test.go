package framework_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// wchcLines counts the lines of the server's wchc answer (watches by session) that name
// path.
func wchcLines(t *testing.T, srv *zktest.Server, path string) int {
	t.Helper()
	out, err := zktest.FourLetterWord(srv.Addr(), "wchc", 5*time.Second)
	require.NoError(t, err)
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == path {
			n++
		}
	}
	return n
}

// Waiters that poll a node that does not change (each call abandoned, as Barrier.Wait
// with a short context abandons it) share one watch per path and kind: neither the server
// nor go-zookeeper holds more than that, however many waiters and calls, and every
// waiter still hears the change.
func TestWatchesSharedAcrossWaitersAndCalls(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/w", []byte("a"), framework.WithParents())
	require.NoError(t, err)

	const waiters, calls = 4, 25
	type held struct{ data, exists, kids *framework.Watch }
	last := make([]held, waiters)
	errs := make(chan error, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				cctx, cancel := context.WithCancel(ctx)
				_, _, d, err := c.GetDataW(cctx, "/w")
				if err != nil {
					cancel()
					errs <- err
					return
				}
				_, e, err := c.ExistsW(cctx, "/w")
				if err != nil {
					cancel()
					errs <- err
					return
				}
				_, _, k, err := c.ChildrenW(cctx, "/w")
				cancel() // the poller gives up on this call's watches
				if err != nil {
					errs <- err
					return
				}
				last[i] = held{d, e, k}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	// go-zookeeper keys an exists watch on an existing node as a data watch: at most one
	// channel each for data, exists and children.
	assert.LessOrEqual(t, framework.ZKWatchers(c, "/w"), 3, "go-zookeeper watchers for /w after %d waiters x %d calls", waiters, calls)
	assert.LessOrEqual(t, wchcLines(t, srv, "/w"), 2, "server watches on /w (data, child)")

	// Every waiter still hears the change.
	fired := func(w *framework.Watch, want zk.EventType, what string) {
		t.Helper()
		select {
		case <-w.Done():
			assert.Equal(t, want, w.Event().Type, what)
		case <-time.After(30 * time.Second): // failure bound only
			t.Fatalf("%s watch did not fire", what)
		}
	}
	_, err = c.SetData(ctx, "/w", []byte("b"), -1)
	require.NoError(t, err)
	for _, h := range last {
		fired(h.data, zk.EventNodeDataChanged, "data")
		fired(h.exists, zk.EventNodeDataChanged, "exists")
	}
	_, err = c.Create(ctx, "/w/kid", nil)
	require.NoError(t, err)
	for _, h := range last {
		fired(h.kids, zk.EventNodeChildrenChanged, "children")
	}
	assert.Equal(t, 0, framework.ZKWatchers(c, "/w"), "every go-zookeeper watcher fired")
	require.NoError(t, c.Delete(ctx, "/w", framework.WithChildren()))
}

// A watch that is shared wakes every waiter when the client closes.
func TestWatchFiresOnClose(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/wc", nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		c2 := testutil.ConnectFailFast(t, srv.ConnectString())
		_ = c2.Delete(context.Background(), "/wc")
	})
	_, _, a, err := c.GetDataW(ctx, "/wc")
	require.NoError(t, err)
	_, _, b, err := c.GetDataW(ctx, "/wc")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	for _, w := range []*framework.Watch{a, b} {
		select {
		case <-w.Done():
			assert.Equal(t, zk.EventNotWatching, w.Event().Type)
		case <-time.After(30 * time.Second): // failure bound only
			t.Fatal("watch did not fire on Close")
		}
	}
}
