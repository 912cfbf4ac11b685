package doublebarrier_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// newLosingClientWith is newLosingClient with more options (a request hook, a logger).
func newLosingClientWith(t *testing.T, srv *zktest.Server, opts ...framework.Option) *losingClient {
	t.Helper()
	proxy := zktest.NewProxy(t, srv.ConnectString())
	all := append([]framework.Option{framework.WithSessionTimeout(90 * time.Second),
		framework.WithSimulatedExpiry(0.1), framework.WithConnectionTimeout(2 * time.Second),
		framework.WithDialer(proxy.Dialer()), framework.WithRetryPolicy(testutil.FastRetry(t))}, opts...)
	c, err := framework.New(srv.ConnectString(), all...)
	require.NoError(t, err)
	l := &losingClient{c: c, proxy: proxy, states: testutil.States(c)}
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Close() })
	return l
}

// lowestAfter returns a new member on c whose node name sorts before every one of ms.
func lowestAfter(t testing.TB, c *framework.Client, path string, qty int, ms ...*doublebarrier.DoubleBarrier) *doublebarrier.DoubleBarrier {
	t.Helper()
	for {
		m := newMember(t, c, path, qty)
		lowest := true
		for _, o := range ms {
			lowest = lowest && m.Node() < o.Node()
		}
		if lowest {
			return m
		}
	}
}

// lowestFirst returns a and b ordered by node name: the lowest node is the last to go.
func lowestFirst(a, b *doublebarrier.DoubleBarrier) (lowest, highest *doublebarrier.DoubleBarrier) {
	if b.Node() < a.Node() {
		return b, a
	}
	return a, b
}

// waitFor polls cond every 5 ms until it holds or ctx ends; it reports whether it held.
// It is for hooks and goroutines, which must not fail the test themselves.
func waitFor(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return true
}

// exists reports whether path exists, read with c (false on an error).
func exists(ctx context.Context, c *framework.Client, path string) bool {
	st, err := c.Exists(ctx, path)
	return err == nil && st != nil
}

// serverWatches returns the paths that the server at addr holds watches on for session
// sid (its wchc four-letter word).
func serverWatches(t testing.TB, addr string, sid int64) []string {
	t.Helper()
	out, err := zktest.FourLetterWord(addr, "wchc", 5*time.Second)
	require.NoError(t, err)
	var paths []string
	mine := false
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
			s := strings.TrimPrefix(strings.TrimSpace(line), "0x")
			v, err := strconv.ParseUint(s, 16, 64)
			mine = err == nil && int64(v) == sid
			continue
		}
		if mine {
			paths = append(paths, strings.TrimSpace(line))
		}
	}
	return paths
}

// underPath keeps the paths at or under path.
func underPath(paths []string, path string) []string {
	var out []string
	for _, p := range paths {
		if p == path || strings.HasPrefix(p, path+"/") {
			out = append(out, p)
		}
	}
	return out
}

// onlyCanceled reports whether err says nothing but that the context was cancelled: it
// matches context.Canceled, and every error in its tree is either context.Canceled or a
// plain fmt wrapper of it (no sentinel or typed error beside it).
func onlyCanceled(err error) bool {
	if err == nil || !errors.Is(err, context.Canceled) {
		return false
	}
	var walk func(e error) bool
	walk = func(e error) bool {
		if e == context.Canceled { //nolint:errorlint // the leaf itself
			return true
		}
		switch typ := fmt.Sprintf("%T", e); typ {
		case "*fmt.wrapError", "*fmt.wrapErrors":
		default:
			return false // something beside the context's error
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				if !walk(x) {
					return false
				}
			}
			return true
		case interface{ Unwrap() error }:
			return walk(u.Unwrap())
		}
		return false
	}
	return walk(err)
}

// waitChan turns the first value on ch into a closed channel.
func waitChan(ch <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		<-ch
		close(done)
	}()
	return done
}
