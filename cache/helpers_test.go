package cache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// newClient connects a client as testutil.ConnectFailFast does, without container parents
// unless opts say otherwise, and closes it at cleanup.
func newClient(t testing.TB, connect string, opts ...framework.Option) *framework.Client {
	t.Helper()
	return testutil.ConnectFailFast(t, connect, append([]framework.Option{framework.WithContainers(false)}, opts...)...)
}

// recorder keeps every event a listener got, and checks as it goes that the sequence is
// consistent: per path, no update or removal of an absent node, no second addition
// without a removal, no tree node added before its parent or removed before its children.
// It replays the events into a model of what the cache should hold.
type recorder struct {
	root string
	tree bool // check parent/child order

	mu         sync.Mutex
	events     []cache.Event
	model      map[string]cache.ChildData
	violations []string
	sig        chan struct{}
	pos        int // next event returned by next
}

func newRecorder(root string, tree bool) *recorder {
	return &recorder{root: root, tree: tree, model: map[string]cache.ChildData{}, sig: make(chan struct{}, 1)}
}

// listen registers the recorder with add (a cache's AddListener) and removes it at cleanup.
func listen(t testing.TB, r *recorder, add func(func(cache.Event)) func()) *recorder {
	remove := add(r.on)
	t.Cleanup(remove)
	return r
}

func (r *recorder) on(ev cache.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	bad := func(format string, args ...any) {
		r.violations = append(r.violations, fmt.Sprintf("event %d %v: ", len(r.events)-1, ev)+fmt.Sprintf(format, args...))
	}
	if ev.Data != nil {
		p := ev.Data.Path
		_, present := r.model[p]
		switch ev.Type {
		case cache.NodeCreated, cache.ChildAdded, cache.TreeNodeAdded:
			if present {
				bad("added twice without a removal")
			}
			if parent := framework.ParentPath(p); r.tree && p != r.root {
				if _, ok := r.model[parent]; !ok {
					bad("added before its parent")
				}
			}
			r.model[p] = cloneData(*ev.Data)
		case cache.NodeChanged, cache.ChildUpdated, cache.TreeNodeUpdated:
			if !present {
				bad("updated while absent")
			} else if ev.Old == nil || ev.Old.Stat.Mzxid != r.model[p].Stat.Mzxid {
				bad("Old does not match the previous event")
			}
			if ev.Old != nil && ev.Old.Stat.Mzxid >= ev.Data.Stat.Mzxid {
				bad("mzxid did not grow")
			}
			r.model[p] = cloneData(*ev.Data)
		case cache.NodeDeleted, cache.ChildRemoved, cache.TreeNodeRemoved:
			if !present {
				bad("removed while absent")
			}
			if r.tree {
				for q := range r.model {
					if strings.HasPrefix(q, p+"/") || (p == "/" && q != "/") {
						bad("removed before its descendant %s", q)
						break
					}
				}
			}
			delete(r.model, p)
		}
	}
	select {
	case r.sig <- struct{}{}:
	default:
	}
}

func cloneData(d cache.ChildData) cache.ChildData {
	d.Data = append([]byte(nil), d.Data...)
	return d
}

// next returns the next event not returned yet, failing the test after d.
// seed puts what the cache held at start into the model (BuildInitialCache reports no
// events for it).
func (r *recorder) seed(data ...cache.ChildData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range data {
		r.model[d.Path] = cloneData(d)
	}
}

func (r *recorder) next(t testing.TB, d time.Duration) cache.Event {
	t.Helper()
	deadline := time.After(d)
	for {
		r.mu.Lock()
		if r.pos < len(r.events) {
			ev := r.events[r.pos]
			r.pos++
			r.mu.Unlock()
			return ev
		}
		r.mu.Unlock()
		select {
		case <-r.sig:
		case <-deadline:
			t.Fatalf("no event within %v (after %v)", d, r.all())
		}
	}
}

// expect checks that the next events are want ("TYPE /path" or "TYPE"), in order.
func (r *recorder) expect(t testing.TB, want ...string) {
	t.Helper()
	for i, w := range want {
		ev := r.next(t, 15*time.Second)
		require.Equal(t, w, ev.String(), "event %d of %v", i, want)
	}
}

// skipUntil drops events until one whose String is want.
func (r *recorder) skipUntil(t testing.TB, want string) {
	t.Helper()
	for {
		if r.next(t, 20*time.Second).String() == want {
			return
		}
	}
}

// noMore checks that no event is pending.
func (r *recorder) noMore(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Equal(t, len(r.events), r.pos, "unexpected events: %v", r.events[r.pos:])
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, ev := range r.events {
		s = append(s, ev.String())
	}
	return s
}

func (r *recorder) seen(want string) bool {
	for _, s := range r.all() {
		if s == want {
			return true
		}
	}
	return false
}

func (r *recorder) snapshotModel() map[string]cache.ChildData {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]cache.ChildData, len(r.model))
	for k, v := range r.model {
		m[k] = v
	}
	return m
}

func (r *recorder) checkConsistent(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Empty(t, r.violations, "inconsistent event sequence")
}

// serverTree reads the subtree at root (to maxDepth) straight from the server.
func serverTree(ctx context.Context, c *framework.Client, root string, maxDepth int) (map[string]cache.ChildData, error) {
	out := map[string]cache.ChildData{}
	var walk func(p string, depth int) error
	walk = func(p string, depth int) error {
		data, st, err := c.GetData(ctx, p)
		if errors.Is(err, framework.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		out[p] = cache.ChildData{Path: p, Data: data, Stat: *st}
		if depth >= maxDepth {
			return nil
		}
		kids, _, err := c.Children(ctx, p)
		if errors.Is(err, framework.ErrNoNode) {
			delete(out, p)
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := walk(framework.JoinPath(p, k), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root, 0)
}

// diff describes how got differs from want (data, czxid and mzxid), or returns "".
func diff(got, want map[string]cache.ChildData) string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			out = append(out, "missing "+p)
		case !bytes.Equal(g.Data, w.Data) || g.Stat.Czxid != w.Stat.Czxid || g.Stat.Mzxid != w.Stat.Mzxid:
			out = append(out, fmt.Sprintf("differs %s: %q czxid %d mzxid %d, want %q czxid %d mzxid %d",
				p, g.Data, g.Stat.Czxid, g.Stat.Mzxid, w.Data, w.Stat.Czxid, w.Stat.Mzxid))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, "extra "+p)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// requireConverges waits until snapshot() equals the server's subtree.
func requireConverges(t testing.TB, c *framework.Client, root string, maxDepth int, snapshot func() map[string]cache.ChildData) {
	t.Helper()
	var last string
	ok := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		want, err := serverTree(ctx, c, root, maxDepth)
		if err != nil {
			last = err.Error()
			return false
		}
		last = diff(snapshot(), want)
		return last == ""
	}
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("cache does not equal the server:\n%s", last)
		}
		time.Sleep(20 * time.Millisecond) // polling the server, not synchronising goroutines
	}
}

func create(t testing.TB, c *framework.Client, p string, data string) {
	t.Helper()
	_, err := c.Create(testutil.Context(t, 10*time.Second), p, []byte(data), framework.WithParents())
	require.NoError(t, err)
}

func set(t testing.TB, c *framework.Client, p string, data string) {
	t.Helper()
	_, err := c.SetData(testutil.Context(t, 10*time.Second), p, []byte(data), -1)
	require.NoError(t, err)
}

func del(t testing.TB, c *framework.Client, p string) {
	t.Helper()
	require.NoError(t, c.Delete(testutil.Context(t, 10*time.Second), p, framework.WithChildren()))
}
