package framework_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// countingHandler counts the tellings per watch.
type countingHandler struct {
	mu  sync.Mutex
	n   map[*framework.Watch]int
	evs map[*framework.Watch][]framework.Event
}

func newCountingHandler() *countingHandler {
	return &countingHandler{n: map[*framework.Watch]int{}, evs: map[*framework.Watch][]framework.Event{}}
}

func (h *countingHandler) WatchFired(w *framework.Watch, ev framework.Event) {
	h.mu.Lock()
	h.n[w]++
	h.evs[w] = append(h.evs[w], ev)
	h.mu.Unlock()
}

func (h *countingHandler) count(w *framework.Watch) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[w]
}

func (h *countingHandler) events(w *framework.Watch) []framework.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]framework.Event(nil), h.evs[w]...)
}

// Session expiry ends every watch of the session exactly once
// with EventNotWatching (data, children, exists-on-a-missing-node; a Handle and a Done
// waiter sharing one), leaves none in the registry or in go-zookeeper, and a watch set
// again on the same path afterwards (the same go-zookeeper connection, whose maps were
// dropped) fires on the next change, once.
func TestWatchesEndOnceOnExpiryAndFireWhenSetAgain(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond),
		framework.WithDialer(proxy.Dialer()), framework.WithRetryPolicy(testutil.FastRetry(t)))
	require.NoError(t, err)
	rec := recordStates(c)
	require.NoError(t, c.Start())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntilConnected(ctx))
	_, sid := c.Session()
	_, err = c.Create(ctx, "/rw/a", []byte("x"), framework.WithParents())
	require.NoError(t, err)

	_, _, wd, err := c.GetDataW(ctx, "/rw/a")
	require.NoError(t, err)
	_, _, wd2, err := c.GetDataW(ctx, "/rw/a")
	require.NoError(t, err)
	require.Same(t, wd, wd2)
	_, _, wc, err := c.ChildrenW(ctx, "/rw/a")
	require.NoError(t, err)
	st, we, err := c.ExistsW(ctx, "/rw/missing")
	require.NoError(t, err)
	require.Nil(t, st)
	st, wx, err := c.ExistsW(ctx, "/rw/a")
	require.NoError(t, err)
	require.NotNil(t, st)
	require.Equal(t, 4, c.Watches())

	h := newCountingHandler()
	for _, w := range []*framework.Watch{wd, wc, we, wx} {
		w.Handle(h)
	}
	wd2.Handle(h) // a second recipe's handler on the shared watch
	done := wd.Done()

	proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		if err != nil {
			return false
		}
		sessions, err := zktest.Sessions(srv.Addr())
		if err != nil {
			return false
		}
		_ = owners
		for _, s := range sessions {
			if s == sid {
				return false
			}
		}
		return true
	}, 20*time.Second, 50*time.Millisecond)
	rec.waitFor(t, 10*time.Second, framework.Connected, framework.Suspended, framework.Lost)
	proxy.Heal()
	rec.waitFor(t, 20*time.Second, framework.Connected, framework.Suspended, framework.Lost, framework.Reconnected)

	testutil.WaitClosed(t, done, 10*time.Second, "the data watch's Done after expiry")
	require.Eventually(t, func() bool {
		return h.count(wd) == 2 && h.count(wc) == 1 && h.count(we) == 1 && h.count(wx) == 1
	}, 10*time.Second, 10*time.Millisecond, "each watch told once per Handle")
	for _, w := range []*framework.Watch{wd, wc, we, wx} {
		require.Equal(t, zk.EventNotWatching, w.Event().Type)
		for _, ev := range h.events(w) {
			require.Equal(t, zk.EventNotWatching, ev.Type)
		}
	}
	require.Equal(t, 0, c.Watches())
	require.Equal(t, 0, framework.ZKWatchers(c, "/rw/a"))

	// Set again on the same path, same connection: it fires once, on the next change.
	_, _, wd3, err := c.GetDataW(ctx, "/rw/a")
	require.NoError(t, err)
	require.NotSame(t, wd, wd3)
	_, _, wc3, err := c.ChildrenW(ctx, "/rw/a")
	require.NoError(t, err)
	_, we3, err := c.ExistsW(ctx, "/rw/missing")
	require.NoError(t, err)
	require.Equal(t, 3, c.Watches())
	h3 := newCountingHandler()
	wd3.Handle(h3)
	wc3.Handle(h3)
	we3.Handle(h3)
	_, err = c.SetData(ctx, "/rw/a", []byte("y"), -1)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/rw/a/k", nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/rw/missing", nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return h3.count(wd3) == 1 && h3.count(wc3) == 1 && h3.count(we3) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, zk.EventNodeDataChanged, wd3.Event().Type)
	require.Equal(t, zk.EventNodeChildrenChanged, wc3.Event().Type)
	require.Equal(t, zk.EventNodeCreated, we3.Event().Type)
	require.Equal(t, 0, c.Watches())
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, 1, h3.count(wd3))
	require.Equal(t, 2, h.count(wd), "the expired watch is not told again")
}

// Close ends every watch of the registry exactly once, across
// kinds and many paths (the registry's per-connection maps are emptied while they are
// walked), and the registry is empty after.
func TestWatchCloseEndsEveryWatchOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	const n = 60
	var ws []*framework.Watch
	for i := range n {
		p := fmt.Sprintf("/rc/n%d", i)
		_, err := c.Create(ctx, p, nil, framework.WithParents())
		require.NoError(t, err)
		_, _, w, err := c.GetDataW(ctx, p)
		require.NoError(t, err)
		ws = append(ws, w)
		_, _, w, err = c.ChildrenW(ctx, p)
		require.NoError(t, err)
		ws = append(ws, w)
		_, w, err = c.ExistsW(ctx, p+"/none")
		require.NoError(t, err)
		ws = append(ws, w)
	}
	require.Equal(t, 3*n, c.Watches())
	h := newCountingHandler()
	for _, w := range ws {
		w.Handle(h)
	}
	require.NoError(t, c.Close())
	for i, w := range ws {
		require.Equal(t, 1, h.count(w), "watch %d", i)
		require.Equal(t, zk.EventNotWatching, w.Event().Type)
		require.ErrorIs(t, w.Event().Err, framework.ErrClosed)
	}
	require.Equal(t, 0, c.Watches())
}
