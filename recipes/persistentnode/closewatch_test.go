package persistentnode_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// A TTLNode whose container another client deletes as the Node's loop sends its look at
// the container, and which is closed while that look is on its way, leaves no watch of
// its session on the server: the look reaches the server after Close and finds no node,
// and a watch set there would wait for a node that nobody makes again (go-zookeeper
// cannot remove it). The explorer's pnode-ttl/deleted/k3 run, made deterministic: the
// look goes out only once the child was first touched, right after the delete, into a
// stalled connection that is healed once Close returned.
func TestTTLNodeClosedDuringLookAtDeletedContainerLeavesNoWatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/pn/ttl"
	var armed atomic.Bool
	touched := make(chan struct{}) // WaitForInitialCreate returned: the child was written
	held := make(chan struct{})    // the container is deleted; the look goes out stalled
	deleted := make(chan error, 1)
	hook := framework.WithRequestHook(func(op string) {
		// The first read after the container's create (whose Stat comes with a getACL)
		// is the loop's look at it; the touches write (setData, create).
		if (op == "exists" || op == "getData") && armed.CompareAndSwap(true, false) {
			select {
			case <-touched:
			case <-ctx.Done():
			}
			deleted <- other.Delete(ctx, path, framework.WithChildren())
			proxy.Stall()
			close(held)
		}
	})
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), hook, framework.WithSessionTimeout(30*time.Second))
	tn, err := persistentnode.NewTTL(c, path, 10*time.Second, []byte("d")) // no touch but the first
	require.NoError(t, err)
	armed.Store(true)
	require.NoError(t, tn.Start())
	require.NoError(t, tn.WaitForInitialCreate(ctx))
	close(touched)
	testutil.WaitClosed(t, held, 20*time.Second, "the look at the deleted container")
	require.NoError(t, <-deleted)

	closed := make(chan error, 1)
	go func() { closed <- tn.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(15 * time.Second): // a bound on the wait, not an assertion
		proxy.Heal()
		require.NoError(t, <-closed)
	}
	proxy.Heal()
	_, err = c.Exists(ctx, "/pn") // the look went out before: the server has answered it
	require.NoError(t, err)
	st, err := other.Exists(ctx, path)
	require.NoError(t, err)
	require.Nil(t, st, "the container was made again after Close")
	require.Empty(t, sessionWatches(t, srv.Addr(), c.SessionID(), path),
		"the closed TTLNode's watches on the server, on a path nobody makes again")
	require.NoError(t, other.Delete(ctx, "/pn", framework.WithChildren(), framework.Quietly()))
}

// sessionWatches returns the paths at or under base that session sid watches on the
// server at addr (its wchc four-letter word: a session id, then its paths indented).
func sessionWatches(t *testing.T, addr string, sid int64, base string) []string {
	t.Helper()
	out, err := zktest.FourLetterWord(addr, "wchc", 5*time.Second)
	require.NoError(t, err)
	var paths []string
	mine := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "0x") {
			mine = strings.TrimSpace(line) == fmt.Sprintf("0x%x", sid)
			continue
		}
		p := strings.TrimSpace(line)
		if mine && (p == base || strings.HasPrefix(p, base+"/")) {
			paths = append(paths, p)
		}
	}
	return paths
}
