package framework_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// handlerFunc is a WatchHandler made of a func, as callers write them.
type handlerFunc func(*framework.Watch, framework.Event)

func (f handlerFunc) WatchFired(w *framework.Watch, ev framework.Event) { f(w, ev) }

// Unhandle: a handler of a type that cannot be compared (a func type)
// is withdrawn, or refused, without a panic; "bad input gets a clear error, never a panic".
func TestWatchUnhandleFuncHandlerDoesNotPanic(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/rf", nil)
	require.NoError(t, err)
	_, _, w, err := c.GetDataW(ctx, "/rf")
	require.NoError(t, err)
	told := 0
	var mu sync.Mutex
	f := handlerFunc(func(*framework.Watch, framework.Event) { mu.Lock(); told++; mu.Unlock() })
	w.Handle(f)
	require.NotPanics(t, func() { w.Unhandle(f) }, "Unhandle of a func-typed handler")
}
