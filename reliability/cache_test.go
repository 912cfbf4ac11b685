package reliability_test

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
)

// serverTree reads the subtree at root through c: path -> data and mzxid.
func serverTree(ctx context.Context, c *framework.Client, root string) (map[string]string, error) {
	out := map[string]string{}
	var walk func(p string) error
	walk = func(p string) error {
		data, st, err := c.GetData(ctx, p)
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%s@%d", data, st.Mzxid)
		kids, _, err := c.Children(ctx, p)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := walk(framework.JoinPath(p, k)); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root)
}

func cacheTree(tc *cache.TreeCache) map[string]string {
	out := map[string]string{}
	for p, d := range tc.Snapshot() {
		out[p] = fmt.Sprintf("%s@%d", d.Data, d.Stat.Mzxid)
	}
	return out
}

func diff(a, b map[string]string) string {
	var lines []string
	for k, v := range a {
		if b[k] != v {
			lines = append(lines, fmt.Sprintf("%s: cache %q server %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: missing in cache (server %q)", k, v))
		}
	}
	sort.Strings(lines)
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString(l + "\n")
	}
	return buf.String()
}

// runCache: a tree cache on the victim follows a subtree that another client changes
// while the fault lasts (where the ensemble takes writes) and after it heals; within the
// liveness bound the cache must equal the server's tree — nothing silently missed.
func runCache(t *testing.T, f fault) {
	e := newEnv(t, 1)
	root := e.base + "/tree"
	w := e.others[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range []string{root + "/a/x", root + "/a/y", root + "/b"} {
		_, err := w.Create(ctx, p, []byte("v0"), framework.WithContainerParents())
		require.NoError(t, err)
	}
	tc, err := cache.NewTreeCache(e.victim, root, cache.WithStartMode(cache.BuildInitialCache))
	require.NoError(t, err)
	require.NoError(t, tc.Start(ctx))
	defer tc.Close()

	change := func(i int) {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		defer ccancel()
		_, _ = w.SetData(cctx, root+"/a/x", []byte(fmt.Sprintf("v%d", i)), -1)
		_, _ = w.Create(cctx, fmt.Sprintf("%s/b/n%d", root, i), []byte("new"))
		_ = w.Delete(cctx, root+"/a/y", framework.Quietly())
		_, _ = w.Create(cctx, root+"/a/y", []byte(fmt.Sprintf("again%d", i))) // deleted and re-created
	}
	heal := f.inject(t, e)
	change(1)
	time.Sleep(f.hold)
	change(2)
	heal()
	change(3)
	var last string
	require.Eventually(t, func() bool {
		want, err := serverTree(ctx, w, root)
		if err != nil {
			return false
		}
		last = diff(cacheTree(tc), want)
		return last == ""
	}, livenessBound, 100*time.Millisecond, "the cache does not match the server:\n%s", last)
	require.NoError(t, tc.Close())
	// Quietly: the tree's root is a container, which the server may reap first.
	require.NoError(t, w.Delete(ctx, root, framework.WithChildren(), framework.Quietly()))
	e.checkClean()
}

// The tree cache runs under every fault in TestUnderFaults.
func init() { registerScenario("cache", false, runCache) }
