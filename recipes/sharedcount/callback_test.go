package sharedcount_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

// A listener that calls back in: it sets the count and then closes it, from
// inside the listener. Listeners are called one at a time on a goroutine of the library,
// so the Set does not call the listener again underneath itself, and Close returns
// there instead of waiting for the goroutine it runs on.
func TestListenerSetsAndCloses(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c1 := testutil.ConnectFailFast(t, srv.ConnectString())
	c2 := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/callback/count"

	a := start(t, c1, path, 0)
	var depth, nested atomic.Int32
	var acted atomic.Bool
	done := make(chan error, 1)
	a.AddListener(func(v sharedcount.Versioned[int32], err error) {
		if depth.Add(1) > 1 {
			nested.Add(1)
		}
		defer depth.Add(-1)
		if err != nil || !acted.CompareAndSwap(false, true) {
			return
		}
		serr := a.Set(ctx, v.Value+1) // from inside the listener
		done <- errors.Join(serr, a.Close())
	})
	b := start(t, c2, path, 0)
	require.NoError(t, b.Set(ctx, 5))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // a bound on a hang, not a timing assumption
		t.Fatal("a listener that sets and closes its count did not return")
	}
	assert.Zero(t, nested.Load(), "the listener was called again underneath its own Set")
	require.NoError(t, a.Close())
	data, _, err := c2.GetData(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, sharedcount.Encode(6), data)
}
