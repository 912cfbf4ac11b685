package cache_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A node deleted and made again in one transaction is never missing from a cache: when a
// listener hears the old node's removal, the cache already holds the new node, whose
// addition follows. (Discovery's ServiceCache relies on it: an instance whose registration
// replaces its node never vanishes from providers.) The moment is made deterministic: the
// cache's listing of the parent, which tells it the new node is no leftover of a replaced
// parent, is held until a listener heard the removal (or for 5 s when none comes first).
func TestCacheReplacedNodeNeverMissing(t *testing.T) {
	type cacheUnderTest struct {
		start func(c *framework.Client, root string) (get func(string) (cache.ChildData, bool), add func(func(cache.Event)) func(), stop func() error)
	}
	ctx := testutil.Context(t, 120*time.Second)
	caches := map[string]cacheUnderTest{
		"path children cache": {func(c *framework.Client, root string) (func(string) (cache.ChildData, bool), func(func(cache.Event)) func(), func() error) {
			pc, err := cache.NewPathChildrenCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
			require.NoError(t, err)
			require.NoError(t, pc.Start(ctx))
			return pc.Get, pc.AddListener, pc.Close
		}},
		"tree cache": {func(c *framework.Client, root string) (func(string) (cache.ChildData, bool), func(func(cache.Event)) func(), func() error) {
			tc, err := cache.NewTreeCache(c, root)
			require.NoError(t, err)
			require.NoError(t, tc.Start(ctx))
			return tc.Get, tc.AddListener, tc.Close
		}},
		"curator cache": {func(c *framework.Client, root string) (func(string) (cache.ChildData, bool), func(func(cache.Event)) func(), func() error) {
			cc, err := cache.NewCuratorCache(c, root)
			require.NoError(t, err)
			require.NoError(t, cc.Start(ctx))
			return cc.Get, cc.AddListener, cc.Close
		}},
	}
	srv := zktest.NewServer(t)
	for name, cut := range caches {
		t.Run(name, func(t *testing.T) {
			leakcheck.Check(t)
			other := newClient(t, srv.ConnectString())
			var armed atomic.Bool
			var once sync.Once
			heard := make(chan struct{})
			c := newClient(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
				if op == "getChildren" && armed.CompareAndSwap(true, false) {
					select {
					case <-heard:
					case <-time.After(5 * time.Second):
					}
				}
			}))
			const root = "/replaced"
			const x = root + "/x"
			create(t, other, x, "x1")
			t.Cleanup(func() { _ = other.Delete(ctx, root, framework.WithChildren(), framework.Quietly()) })
			get, add, stop := cut.start(c, root)
			t.Cleanup(func() { _ = stop() })
			var old cache.ChildData
			require.Eventually(t, func() bool {
				var ok bool
				old, ok = get(x)
				return ok
			}, 30*time.Second, 10*time.Millisecond, "the cache holds %s", x)

			var mu sync.Mutex
			var atRemoval []string // what the cache held at x when its removal was heard
			added := make(chan cache.ChildData, 1)
			remove := add(func(ev cache.Event) {
				if ev.Data == nil || ev.Data.Path != x {
					return
				}
				switch ev.Type {
				case cache.ChildRemoved, cache.TreeNodeRemoved, cache.NodeDeleted:
					held, ok := get(x)
					mu.Lock()
					switch {
					case !ok:
						atRemoval = append(atRemoval, "nothing")
					case held.Stat.Czxid == old.Stat.Czxid:
						atRemoval = append(atRemoval, "the old node")
					default:
						atRemoval = append(atRemoval, "the new node")
					}
					mu.Unlock()
					once.Do(func() { close(heard) })
				case cache.ChildAdded, cache.TreeNodeAdded, cache.NodeCreated:
					added <- *ev.Data
				}
			})
			t.Cleanup(remove)

			armed.Store(true)
			_, err := other.Transaction(ctx,
				framework.DeleteOp(x, -1),
				framework.CreateOp(x, []byte("x2"), framework.Persistent, nil))
			require.NoError(t, err)
			var got cache.ChildData
			select {
			case got = <-added:
			case <-time.After(30 * time.Second):
				t.Fatalf("no addition of the new %s within 30 s", x)
			}
			assert.Equal(t, "x2", string(got.Data))
			assert.NotEqual(t, old.Stat.Czxid, got.Stat.Czxid)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []string{"the new node"}, atRemoval, "what the cache held when its listener heard the old node's removal")
		})
	}
}
