package framework_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// reentrant calls back into the watch it is told of.
type reentrant struct {
	then func(w *framework.Watch)
	h    *countingHandler
}

func (r *reentrant) WatchFired(w *framework.Watch, ev framework.Event) {
	r.h.WatchFired(w, ev)
	r.then(w)
}

// Unhandle during a fire: a handler that, while told, withdraws another
// handler of the watch, withdraws itself, adds a handler and reads Done and Event does not
// deadlock the receive loop; the handler it added is told at once; the withdrawn one, whose
// telling had started, is told at most once.
func TestWatchReentrantHandlerDoesNotDeadlock(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/re", nil)
	require.NoError(t, err)
	_, _, w, err := c.GetDataW(ctx, "/re")
	require.NoError(t, err)
	h := newCountingHandler()
	later, added := newCountingHandler(), newCountingHandler()
	var first *reentrant
	first = &reentrant{h: h, then: func(w *framework.Watch) {
		w.Unhandle(later)
		w.Unhandle(first)
		w.Handle(added)
		<-w.Done()
		_ = w.Event()
	}}
	w.Handle(first)
	w.Handle(later)
	_, err = c.SetData(ctx, "/re", []byte("x"), -1)
	require.NoError(t, err)
	testutil.WaitClosed(t, w.Done(), 10*time.Second, "the watch")
	require.Eventually(t, func() bool { return h.count(w) == 1 && added.count(w) == 1 }, 10*time.Second, 10*time.Millisecond)
	// The client still works: its receive loop was not blocked.
	_, err = c.Exists(ctx, "/re")
	require.NoError(t, err)
	require.LessOrEqual(t, later.count(w), 1)
	require.Equal(t, 1, h.count(w))
	require.Equal(t, 0, c.Watches())
}
