package cache_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// churn makes n random creates, sets and deletes under root (two levels, a few names each)
// from w goroutines, and returns the first unexpected error.
func churn(ctx context.Context, c *framework.Client, root string, w, n int, seed uint64) error {
	errs := make(chan error, w)
	for g := range w {
		go func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := range n {
				p := fmt.Sprintf("%s/n%d", root, rng.IntN(4))
				if rng.IntN(2) == 0 {
					p = fmt.Sprintf("%s/m%d", p, rng.IntN(3))
				}
				var err error
				switch op := rng.IntN(10); {
				case op < 4:
					_, err = c.Create(ctx, p, []byte(fmt.Sprintf("c%d-%d", g, i)), framework.WithParents())
				case op < 8:
					_, err = c.SetData(ctx, p, []byte(fmt.Sprintf("s%d-%d", g, i)), -1)
				default:
					err = c.Delete(ctx, p, framework.WithChildren())
				}
				if err != nil && !errors.Is(err, framework.ErrNoNode) && !errors.Is(err, framework.ErrNodeExists) && !errors.Is(err, framework.ErrNotEmpty) {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range w {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func TestRapidChanges(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	cw := newClient(t, srv.ConnectString())
	cc := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const root = "/rapid"
	create(t, cw, root, "")

	tc, err := cache.NewTreeCache(cc, root)
	require.NoError(t, err)
	rt := listen(t, newRecorder(root, true), tc.AddListener)
	pc, err := cache.NewPathChildrenCache(cc, root, cache.WithStartMode(cache.PostInitializedEvent))
	require.NoError(t, err)
	rp := listen(t, newRecorder(root, false), pc.AddListener)
	nc, err := cache.NewNodeCache(cc, root+"/n1")
	require.NoError(t, err)
	rn := listen(t, newRecorder(root+"/n1", false), nc.AddListener)
	for _, s := range []interface{ Start(context.Context) error }{tc, pc, nc} {
		require.NoError(t, s.Start(ctx))
	}
	defer tc.Close()
	defer pc.Close()
	defer nc.Close()

	require.NoError(t, churn(ctx, cw, root, 4, 150, 1))

	requireConverges(t, cw, root, 1<<30, tc.Snapshot)
	requireConverges(t, cw, root, 1, func() map[string]cache.ChildData {
		m := map[string]cache.ChildData{}
		if d, ok := tc.Get(root); ok {
			m[root] = d // the path-children cache does not hold its parent
		}
		for _, d := range pc.Current() {
			m[d.Path] = d
		}
		return m
	})
	requireConverges(t, cw, root+"/n1", 0, func() map[string]cache.ChildData {
		if d, ok := nc.Current(); ok {
			return map[string]cache.ChildData{d.Path: d}
		}
		return map[string]cache.ChildData{}
	})

	// Every listener saw a consistent history that ends where the cache is.
	for _, r := range []*recorder{rt, rp, rn} {
		r.checkConsistent(t)
	}
	require.Eventually(t, func() bool { return diff(rt.snapshotModel(), tc.Snapshot()) == "" }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		m := map[string]cache.ChildData{}
		for _, d := range pc.Current() {
			m[d.Path] = d
		}
		return diff(rp.snapshotModel(), m) == ""
	}, 10*time.Second, 10*time.Millisecond)
	require.True(t, rp.seen("INITIALIZED"))
	t.Logf("events: tree %d, children %d, node %d", len(rt.all()), len(rp.all()), len(rn.all()))
}

func TestReadsReturnCopies(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const root = "/copies"
	create(t, c, root+"/a", "aaa")

	tc, err := cache.NewTreeCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	pc, err := cache.NewPathChildrenCache(c, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	nc, err := cache.NewNodeCache(c, root+"/a", cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	// The first listener scribbles over its event; the second must see it intact.
	tc.AddListener(func(ev cache.Event) {
		if ev.Data != nil {
			for i := range ev.Data.Data {
				ev.Data.Data[i] = 'X'
			}
			ev.Data.Path = "/scribbled"
		}
	})
	got := make(chan cache.Event, 1)
	tc.AddListener(func(ev cache.Event) { got <- ev })
	for _, s := range []interface{ Start(context.Context) error }{tc, pc, nc} {
		require.NoError(t, s.Start(ctx))
	}
	defer tc.Close()
	defer pc.Close()
	defer nc.Close()

	d, _ := tc.Get(root + "/a")
	d.Data[0] = 'X'
	kids, _ := tc.Children(root)
	kids["a"].Data[1] = 'X'
	delete(kids, "a")
	snap := tc.Snapshot()
	snap[root+"/a"].Data[2] = 'X'
	delete(snap, root)
	cur := pc.Current()
	cur[0].Data[0] = 'X'
	d, _ = pc.Get(root + "/a")
	d.Data[1] = 'X'
	d, _ = nc.Current()
	d.Data[2] = 'X'

	for _, read := range []func() (cache.ChildData, bool){
		func() (cache.ChildData, bool) { return tc.Get(root + "/a") },
		func() (cache.ChildData, bool) { return pc.Get(root + "/a") },
		nc.Current,
	} {
		d, ok := read()
		require.True(t, ok)
		require.Equal(t, "aaa", string(d.Data))
	}
	kids, _ = tc.Children(root)
	require.Len(t, kids, 1)
	require.Len(t, tc.Snapshot(), 2)

	set(t, c, root+"/a", "bbb")
	select {
	case ev := <-got:
		require.Equal(t, "NODE_UPDATED /copies/a", ev.String())
		require.Equal(t, "bbb", string(ev.Data.Data))
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	d, _ = tc.Get(root + "/a")
	require.Equal(t, "bbb", string(d.Data))
}

func TestCloseWhileEventsFlow(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	cw := newClient(t, srv.ConnectString())
	cc := newClient(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const root = "/closing"
	create(t, cw, root, "")

	tc, err := cache.NewTreeCache(cc, root)
	require.NoError(t, err)
	var closed atomic.Bool
	var afterClose, calls atomic.Int64
	tc.AddListener(func(cache.Event) {
		calls.Add(1)
		if closed.Load() {
			afterClose.Add(1)
		}
	})
	require.NoError(t, tc.Start(ctx))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := fmt.Sprintf("%s/k%d", root, i%20)
			if _, err := cw.Create(wctx, p, nil); errors.Is(err, framework.ErrNodeExists) {
				_ = cw.Delete(wctx, p)
			}
		}
	}()
	require.Eventually(t, func() bool { return calls.Load() > 50 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, tc.Close())
	closed.Store(true)
	require.NoError(t, tc.Close())
	// Keep writing a little longer: a listener called now would be counted.
	n := calls.Load()
	require.Eventually(t, func() bool {
		st, err := cw.Exists(ctx, root)
		return err == nil && st != nil && st.Cversion > int32(n)+100
	}, 10*time.Second, 5*time.Millisecond)
	close(stop)
	wg.Wait()
	require.Zero(t, afterClose.Load(), "listener called after Close returned")
}
