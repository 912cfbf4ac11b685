package framework_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// Callers sharing watches of three kinds on a few paths while
// the nodes change under them: every watch a caller got fires, each handler is told once,
// no watch is told the event of another path or kind, and once the last change fired them
// neither the registry nor go-zookeeper holds a watch.
func TestWatchChurnFiresEveryWatchOnce(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	w := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	paths := []string{"/ch/a", "/ch/b", "/ch/c"}
	for _, p := range paths {
		_, err := c.Create(ctx, p, nil, framework.WithParents())
		require.NoError(t, err)
	}
	type got struct {
		w    *framework.Watch
		path string
		kind string
	}
	var mu sync.Mutex
	var all []got
	h := newCountingHandler()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				p := paths[(g+i)%len(paths)]
				var fw *framework.Watch
				var err error
				kind := []string{"data", "children", "exists"}[(g+i/3)%3]
				switch kind {
				case "data":
					_, _, fw, err = c.GetDataW(ctx, p)
				case "children":
					_, _, fw, err = c.ChildrenW(ctx, p)
				default:
					_, fw, err = c.ExistsW(ctx, p)
				}
				if err != nil {
					t.Errorf("%s %s: %v", kind, p, err)
					return
				}
				fw.Handle(h)
				mu.Lock()
				all = append(all, got{fw, p, kind})
				mu.Unlock()
				select {
				case <-fw.Done():
				case <-stop:
					return
				}
			}
		}()
	}
	for i := range 150 {
		p := paths[i%len(paths)]
		if i%2 == 0 {
			_, err := w.SetData(ctx, p, []byte(fmt.Sprint(i)), -1)
			require.NoError(t, err)
		} else {
			_, err := w.Create(ctx, p+"/k", nil)
			require.NoError(t, err)
			require.NoError(t, w.Delete(ctx, p+"/k"))
		}
	}
	close(stop)
	wg.Wait()
	// The last change of each node and kind fires what is left.
	for _, p := range paths {
		_, err := w.SetData(ctx, p, []byte("last"), -1)
		require.NoError(t, err)
		_, err = w.Create(ctx, p+"/k", nil)
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Eventually(t, func() bool {
		for _, g := range all {
			select {
			case <-g.w.Done():
			default:
				return false
			}
		}
		return true
	}, 15*time.Second, 10*time.Millisecond, "every watch a caller got fires")
	handles := map[*framework.Watch]int{}
	for _, g := range all {
		handles[g.w]++
	}
	// Done closes before the handlers are told (outside the registry's lock): wait until
	// every telling has come, then check none came twice.
	require.Eventually(t, func() bool {
		for w, n := range handles {
			if h.count(w) < n {
				return false
			}
		}
		return true
	}, 15*time.Second, 10*time.Millisecond, "every Handle told")
	for _, g := range all {
		require.Equal(t, handles[g.w], h.count(g.w), "%s watch of %s: told once per Handle", g.kind, g.path)
		ev := g.w.Event()
		require.Equal(t, g.path, ev.Path, "%s watch of %s told another path's event", g.kind, g.path)
		switch g.kind {
		case "children":
			require.Equal(t, "EventNodeChildrenChanged", ev.Type.String(), "children watch of %s", g.path)
		default:
			require.Equal(t, "EventNodeDataChanged", ev.Type.String(), "%s watch of %s", g.kind, g.path)
		}
	}
	require.Equal(t, 0, c.Watches())
	for _, p := range paths {
		require.Equal(t, 0, framework.ZKWatchers(c, p))
	}
	t.Logf("%d watches handed out, %d distinct", len(all), len(handles))
}
