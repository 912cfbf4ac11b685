package persistentnode_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// The Node's create is applied but the read of its Stat fails (the connection is cut
// right after the create). While it is cut off, someone else deletes the node and makes
// one of its own at the path. Ownership rests on what this Node made (its token, or a
// czxid read for its own create), never on the path: the other's node is not the Node's,
// and Close, even one whose look fails (the connection stalled again), must not delete
// it.
func TestCreateStatLostNodeReplacedIsNotAdopted(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	t.Cleanup(proxy.Heal)
	const path = "/pn/statlost"
	var (
		mu       sync.Mutex
		created  bool
		healed   bool
		cut      = make(chan struct{}) // closed when the request after the create was stalled
		failed   = make(chan struct{}) // closed when the read of the Stat failed
		seen     = make(chan struct{}) // closed when the Node looked at the node after the heal
		failOnce sync.Once
		cutOnce  sync.Once
		seenOnce sync.Once
	)
	noRetry, err := retry.NewNTimes(0, 0)
	require.NoError(t, err)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(4*time.Second),
		framework.WithRetryPolicy(noRetry),
		framework.WithRequestHook(func(op string) {
			mu.Lock()
			defer mu.Unlock()
			if op == "create" {
				created = true
				return
			}
			if created {
				// The Stat read after the create goes into a stall: it fails once the
				// client gives the connection up.
				cutOnce.Do(func() { proxy.Stall(); close(cut) })
			}
		}),
		framework.WithRequestObserver(func(ri framework.RequestInfo) {
			mu.Lock()
			defer mu.Unlock()
			if ri.Op == "getACL" && ri.Err != nil {
				failOnce.Do(func() { close(failed) })
			}
			if healed && ri.Op == "exists" && ri.Path == path && ri.Err == nil {
				seenOnce.Do(func() { close(seen) })
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)
	require.NoError(t, other.EnsurePath(ctx, "/pn"))

	n, err := persistentnode.New(c, path, []byte("mine"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	require.NoError(t, n.Start())
	t.Cleanup(func() { _ = n.Close() })
	select {
	case <-cut:
	case <-ctx.Done():
		t.Fatal("the Node sent no request after its create")
	}
	data, _, err := other.GetData(ctx, path)
	require.NoError(t, err)
	require.Equal(t, "mine", string(data), "the Node's create was applied")
	// Someone else replaces the node while the Node is cut off.
	require.NoError(t, other.Delete(ctx, path))
	_, err = other.Create(ctx, path, []byte("theirs"))
	require.NoError(t, err)
	_, theirs, err := other.GetData(ctx, path)
	require.NoError(t, err)

	select {
	case <-failed:
	case <-ctx.Done():
		t.Fatal("the read of the Stat did not fail")
	}
	mu.Lock()
	healed = true
	mu.Unlock()
	proxy.Heal()
	select {
	case <-seen:
	case <-ctx.Done():
		t.Fatal("the Node did not look at its node again")
	}
	proxy.Stall() // Close cannot look at the node
	closeErr := n.Close()
	t.Logf("Close while stalled: %v", closeErr)
	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	data, st, err := other.GetData(ctx, path)
	require.NoError(t, err, "Close deleted the node someone else made at the path")
	require.Equal(t, "theirs", string(data))
	require.Equal(t, theirs.Czxid, st.Czxid)
	require.NoError(t, other.Delete(ctx, "/pn", framework.WithChildren()))
}
