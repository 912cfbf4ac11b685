package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A listener may close its own cache (a callback that calls back in): Close
// returns there without waiting for the listener's own goroutine, and a Close from
// elsewhere still waits for every goroutine of the cache.
func TestCloseFromOwnListener(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	create(t, c, "/own", "")
	create(t, c, "/own/a", "1")

	type closer interface {
		AddListener(func(cache.Event)) func()
		Start(context.Context) error
		Close() error
	}
	nc, err := cache.NewNodeCache(c, "/own/a")
	require.NoError(t, err)
	pc, err := cache.NewPathChildrenCache(c, "/own")
	require.NoError(t, err)
	tc, err := cache.NewTreeCache(c, "/own")
	require.NoError(t, err)
	for name, cc := range map[string]closer{"node": nc, "children": pc, "tree": tc} {
		closed := make(chan error, 1)
		cc.AddListener(func(ev cache.Event) {
			select {
			case closed <- cc.Close(): // from the cache's own listener
			default:
			}
		})
		require.NoError(t, cc.Start(ctx))
		_, err := c.SetData(ctx, "/own/a", []byte(name), -1)
		require.NoError(t, err)
		select {
		case err := <-closed:
			require.NoError(t, err, name)
		case <-time.After(30 * time.Second): // a bound on a hang, not a timing assumption
			t.Fatalf("%s cache: Close from its own listener did not return", name)
		}
		require.NoError(t, cc.Close(), name) // from outside: waits for the listener's goroutine
	}
	require.NoError(t, c.Delete(ctx, "/own", framework.WithChildren()))
}
