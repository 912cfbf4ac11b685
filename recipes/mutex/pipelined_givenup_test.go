package mutex_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// An acquisition on the hint path given up (its context cancelled) as its create, or the
// listing behind it, goes out: once the given-up node is gone, no watch of it is left
// (client registry, go-zookeeper's watchers on the parent) and no goroutine.
func TestPipelinedGivenUpAcquisitionLeavesNoWatch(t *testing.T) {
	for _, op := range []string{"create", "getChildren"} {
		t.Run(op, func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			var cancel atomic.Pointer[context.CancelFunc]
			c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(func(o string) {
				if o == op {
					if f := cancel.Swap(nil); f != nil {
						(*f)()
					}
				}
			}))
			const path = "/pipelined/givenup"
			m := newMutex(t, c, path)
			warmPipe(t, c, m)
			for range 3 {
				ctx, stop := context.WithCancel(context.Background())
				cancel.Store(&stop)
				l, err := m.Acquire(ctx)
				if err == nil {
					require.NoError(t, l.Release(context.Background()))
				}
				stop()
				wctx := testutil.Context(t, 30*time.Second)
				require.NoError(t, c.WaitGuaranteedDeletes(wctx))
				assertNoChildren(t, srv.ConnectString(), path, c)
				require.Eventually(t, func() bool { return c.Watches() == 0 }, 10*time.Second, 10*time.Millisecond,
					"a watch is left after the given-up acquisition (%d)", c.Watches())
				require.Eventually(t, func() bool { return testutil.ZKWatchers(t, c, path).Children == 0 }, 10*time.Second, 10*time.Millisecond,
					"a children watch on the parent is left after the given-up acquisition")
			}
		})
	}
}
