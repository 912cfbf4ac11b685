package cache_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// lines collects what a built listener's functions say, one string per call.
type lines chan string

func (l lines) say(format string, args ...any) { l <- fmt.Sprintf(format, args...) }

// want reads the next n lines and compares them with want.
func (l lines) want(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	for range want {
		select {
		case s := <-l:
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("got %q, then nothing for 30s; want %q", got, want)
		}
	}
	assert.Equal(t, want, got)
}

// builder returns a listener that reports every kind of event to l, as a builder with one
// function per kind.
func builder(l lines) *cache.CuratorCacheListenerBuilder {
	return cache.NewCuratorCacheListener().
		ForCreates(func(n cache.ChildData) { l.say("created %s %s", n.Path, n.Data) }).
		ForChanges(func(old, n cache.ChildData) { l.say("changed %s %s->%s", n.Path, old.Data, n.Data) }).
		ForDeletes(func(old cache.ChildData) { l.say("deleted %s %s", old.Path, old.Data) }).
		ForInitialized(func() { l.say("initialized") })
}

func paths(cc *cache.CuratorCache) []string {
	var ps []string
	for n := range cc.All() {
		ps = append(ps, n.Path)
	}
	return ps
}

func TestCuratorCache(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := c.Create(ctx, "/cc", []byte("root"))
	require.NoError(t, err)
	_, err = c.Create(ctx, "/cc/a", []byte("1"))
	require.NoError(t, err)

	cc, err := cache.NewCuratorCache(c, "/cc")
	require.NoError(t, err)
	all, after, both := make(lines, 100), make(lines, 100), make(lines, 100)
	cc.AddListener(builder(all).Build())
	cc.AddListener(cache.NewCuratorCacheListener().
		ForAll(func(typ cache.EventType, old, n *cache.ChildData) {
			switch {
			case old == nil:
				after.say("%v %s", typ, n.Path)
			case n == nil:
				after.say("%v %s", typ, old.Path)
			default:
				after.say("%v %s %s->%s", typ, n.Path, old.Data, n.Data)
			}
		}).
		ForInitialized(func() { after.say("initialized") }).
		AfterInitialized().Build())
	cc.AddListener(cache.NewCuratorCacheListener().
		ForCreatesAndChanges(func(old *cache.ChildData, n cache.ChildData) {
			if old == nil {
				both.say("new %s", n.Path)
			} else {
				both.say("now %s %s", n.Path, n.Data)
			}
		}).Build())
	require.NoError(t, cc.Start(ctx))

	all.want(t, "created /cc root", "created /cc/a 1", "initialized")
	after.want(t, "initialized")
	both.want(t, "new /cc", "new /cc/a")

	_, err = c.SetData(ctx, "/cc/a", []byte("2"), -1)
	require.NoError(t, err)
	all.want(t, "changed /cc/a 1->2")
	after.want(t, "NODE_CHANGED /cc/a 1->2")
	both.want(t, "now /cc/a 2")

	_, err = c.Create(ctx, "/cc/b/c", []byte("deep"), framework.WithParents())
	require.NoError(t, err)
	all.want(t, "created /cc/b ", "created /cc/b/c deep")
	after.want(t, "NODE_CREATED /cc/b", "NODE_CREATED /cc/b/c")
	both.want(t, "new /cc/b", "new /cc/b/c")

	assert.Equal(t, 4, cc.Size())
	assert.Equal(t, []string{"/cc", "/cc/a", "/cc/b", "/cc/b/c"}, paths(cc), "All is in path order")
	got, ok := cc.Get("/cc/a")
	require.True(t, ok)
	assert.Equal(t, "2", string(got.Data))
	got.Data[0] = 'x' // a copy: the cache is not changed
	got, _ = cc.Get("/cc/a")
	assert.Equal(t, "2", string(got.Data))
	_, ok = cc.Get("/cc/nothing")
	assert.False(t, ok)
	for n := range cc.All() {
		assert.Equal(t, "/cc", n.Path, "stopping early stops the iteration")
		break
	}

	require.NoError(t, c.Delete(ctx, "/cc/b/c"))
	all.want(t, "deleted /cc/b/c deep")
	after.want(t, "NODE_DELETED /cc/b/c")
	assert.Equal(t, 3, cc.Size())

	require.NoError(t, cc.Close())
	assert.Equal(t, 0, cc.Size(), "Close empties the cache")
	assert.Empty(t, paths(cc))
	assert.Empty(t, all)
	assert.ErrorIs(t, cc.Start(ctx), cache.ErrClosed)
}

func TestCuratorCacheOptions(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := c.Create(ctx, "/one/child", []byte("c"), framework.WithParents())
	require.NoError(t, err)

	// SingleNodeCache: the node alone, not its children.
	single, err := cache.NewCuratorCache(c, "/one", cache.SingleNodeCache(), cache.DoNotClearOnClose())
	require.NoError(t, err)
	l := make(lines, 100)
	single.AddListener(builder(l).Build())
	require.NoError(t, single.Start(ctx))
	assert.ErrorIs(t, single.Start(ctx), cache.ErrAlreadyStarted)
	l.want(t, "created /one ", "initialized")
	_, err = c.Create(ctx, "/one/other", nil)
	require.NoError(t, err)
	_, err = c.SetData(ctx, "/one", []byte("v"), -1)
	require.NoError(t, err)
	l.want(t, "changed /one ->v")
	assert.Equal(t, []string{"/one"}, paths(single))

	// DoNotClearOnClose: what was cached stays readable after Close.
	require.NoError(t, single.Close())
	assert.Equal(t, 1, single.Size())
	got, ok := single.Get("/one")
	require.True(t, ok)
	assert.Equal(t, "v", string(got.Data))

	// A node that does not exist yet: the cache waits for it.
	later, err := cache.NewCuratorCache(c, "/later")
	require.NoError(t, err)
	l = make(lines, 100)
	later.AddListener(builder(l).Build())
	require.NoError(t, later.Start(ctx))
	l.want(t, "initialized")
	assert.Equal(t, 0, later.Size())
	_, err = c.Create(ctx, "/later", []byte("here"))
	require.NoError(t, err)
	l.want(t, "created /later here")
	require.NoError(t, later.Close())
	require.NoError(t, later.Close(), "closing twice is fine")
}

func TestCuratorCacheBadInput(t *testing.T) {
	_, err := cache.NewCuratorCache(nil, "/x")
	assert.Error(t, err)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	for _, p := range []string{"", "x", "/x/", "/a//b"} {
		_, err := cache.NewCuratorCache(c, p)
		assert.Error(t, err, "path %q", p)
	}
	cc, err := cache.NewCuratorCache(c, "/x", nil) // a nil option is ignored
	require.NoError(t, err)
	require.NoError(t, cc.Close())
	assert.True(t, errors.Is(cc.Start(context.Background()), cache.ErrClosed))
	assert.True(t, slices.Equal([]string(nil), paths(cc)))
}
