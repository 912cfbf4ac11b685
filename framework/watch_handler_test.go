package framework_test

import (
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

// handlerRecorder is a WatchHandler that records what it is told.
type handlerRecorder struct {
	mu    sync.Mutex
	got   []framework.Event
	done  []bool // whether Done was closed when told
	watch []*framework.Watch
	sig   chan struct{}
}

func newHandlerRecorder() *handlerRecorder { return &handlerRecorder{sig: make(chan struct{}, 10)} }

func (h *handlerRecorder) WatchFired(w *framework.Watch, ev framework.Event) {
	closed := false
	select {
	case <-w.Done():
		closed = true
	default:
	}
	h.mu.Lock()
	h.got = append(h.got, ev)
	h.done = append(h.done, closed)
	h.watch = append(h.watch, w)
	h.mu.Unlock()
	h.sig <- struct{}{}
}

func (h *handlerRecorder) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

func (h *handlerRecorder) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.sig:
	case <-time.After(15 * time.Second):
		t.Fatal("the handler was not told within 15 s")
	}
}

// A Watch's handlers are told once when it fires, after Done is closed, with
// the event Event returns; a handler given after it fired is told at once; a handler
// withdrawn is not told; callers sharing the client's one watch share its handlers.
func TestWatchHandlers(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/h", []byte("a"), framework.WithParents())
	require.NoError(t, err)

	_, _, w1, err := c.GetDataW(ctx, "/h")
	require.NoError(t, err)
	_, _, w2, err := c.GetDataW(ctx, "/h")
	require.NoError(t, err)
	require.Same(t, w1, w2, "one client watch per node and kind")
	require.Equal(t, 1, c.Watches())

	a, b, gone := newHandlerRecorder(), newHandlerRecorder(), newHandlerRecorder()
	w1.Handle(a)
	w2.Handle(b)
	w1.Handle(gone)
	w1.Unhandle(gone)
	w1.Unhandle(gone) // nothing left to withdraw
	_, err = c.SetData(ctx, "/h", []byte("b"), -1)
	require.NoError(t, err)
	a.wait(t)
	b.wait(t)
	for _, h := range []*handlerRecorder{a, b} {
		h.mu.Lock()
		require.Len(t, h.got, 1)
		require.Equal(t, zk.EventNodeDataChanged, h.got[0].Type)
		require.Equal(t, "/h", h.got[0].Path)
		require.Equal(t, w1.Event(), h.got[0])
		require.True(t, h.done[0], "Done is closed when the handler is told")
		require.Same(t, w1, h.watch[0])
		h.mu.Unlock()
	}
	require.Zero(t, gone.count(), "a withdrawn handler is not told")
	require.Zero(t, c.Watches())

	late := newHandlerRecorder()
	w1.Handle(late) // fired already: told at once, on this goroutine
	require.Equal(t, 1, late.count())

	// A watch the client ends (Close) tells its handlers EventNotWatching.
	_, _, w3, err := c.ChildrenW(ctx, "/h")
	require.NoError(t, err)
	end := newHandlerRecorder()
	w3.Handle(end)
	require.NoError(t, c.Close())
	end.wait(t)
	require.Equal(t, zk.EventNotWatching, end.got[0].Type)
	require.ErrorIs(t, end.got[0].Err, framework.ErrClosed)
	require.Equal(t, 1, a.count()+b.count()-1, "told once each")
}
