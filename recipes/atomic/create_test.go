package atomic_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/zktest"
)

// An increment of a missing counter creates it. The create is applied; someone resets
// the counter (deletes it) before any read the increment makes after its create. The
// increment was applied: it must say so, not report a failure (NoNode) that makes the
// caller apply it a second time. A read after the create, if the increment makes one,
// is held while the counter is reset.
func TestIncrementCreatingCounterResetAfterCreateIsApplied(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	var (
		mu      sync.Mutex
		created bool
		held    = make(chan struct{})
		release = make(chan struct{})
	)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		mu.Lock()
		hold := created && held != nil
		if op == "create" {
			created = true
		}
		h := held
		if hold {
			held = nil
		}
		mu.Unlock()
		if hold {
			close(h)
			<-release
		}
	}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/counters/reset-after-create"
	_, err := other.Create(ctx, "/counters", nil)
	require.NoError(t, err)
	l, err := atomic.NewLong(c, path)
	require.NoError(t, err)

	type out struct {
		r   atomic.Result[int64]
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := l.Increment(context.WithoutCancel(ctx))
		done <- out{r, err}
	}()
	var got out
	select {
	case <-held: // a request after the create: the counter is reset meanwhile
		data, _, err := other.GetData(ctx, path)
		require.NoError(t, err)
		require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 1}, data, "the increment's create was applied")
		require.NoError(t, other.Delete(ctx, path))
		close(release)
		got = <-done
	case got = <-done: // no request after the create
		close(release)
	}
	require.NoError(t, got.err, "the increment's create was applied (result %+v)", got.r)
	assert.True(t, got.r.Succeeded)
	assert.Equal(t, [2]int64{0, 1}, [2]int64{got.r.Pre, got.r.Post})
	assert.Equal(t, 1, got.r.Stats.OptimisticTries)
}
