package groupmember_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// A member's create is applied but the read that follows it fails (the connection is
// cut right after the create). While it is cut off, its node is deleted and another
// process's member of the same id joins: that node is the other member's. Once back,
// this member must not take it as its own, and its Close, even one whose look fails
// (the connection stalled again), must leave the other member in the group.
func TestCreateStatLostOtherMemberOfSameIDStays(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	t.Cleanup(proxy.Heal)
	const g, id = "/services/statlost", "a"
	const path = g + "/" + id
	var (
		mu       sync.Mutex
		created  bool
		healed   bool
		cut      = make(chan struct{}) // closed when the read after the create was stalled
		failed   = make(chan struct{}) // closed when that read failed
		seen     = make(chan struct{}) // closed when the member looked at its node after the heal
		cutOnce  sync.Once
		failOnce sync.Once
		seenOnce sync.Once
	)
	noRetry, err := retry.NewNTimes(0, 0)
	require.NoError(t, err)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(4*time.Second),
		framework.WithRetryPolicy(noRetry),
		framework.WithRequestHook(func(op string) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case op == "create":
				created = true
			case op == "getACL" && created:
				// The read of the member node after its create goes into a stall: it
				// fails once the client gives the connection up.
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
	require.NoError(t, other.EnsurePath(ctx, g))

	m, err := groupmember.New(c, g, id, []byte("mine"))
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- m.Start(ctx) }() // its cache's first read may wait for the heal
	t.Cleanup(func() { _ = m.Close() })
	for _, step := range []struct {
		ch   <-chan struct{}
		what string
	}{{cut, "the member sent no read after its create"}, {failed, "the read after the create did not fail"}} {
		select {
		case <-step.ch:
		case <-ctx.Done():
			t.Fatal(step.what)
		}
	}
	data, _, err := other.GetData(ctx, path)
	require.NoError(t, err)
	require.Equal(t, "mine", string(data), "the member's create was applied")
	// Its node is deleted; another process's member of the same id joins.
	require.NoError(t, other.Delete(ctx, path))
	theirs := join(t, other, g, id, "theirs")
	_, before, err := other.GetData(ctx, path)
	require.NoError(t, err)

	mu.Lock()
	healed = true
	mu.Unlock()
	proxy.Heal()
	require.NoError(t, testutil.Result(t, started, 60*time.Second, "Start"))
	select {
	case <-seen:
	case <-ctx.Done():
		t.Fatal("the member did not look at its node again")
	}
	proxy.Stall() // Close cannot look at the node
	closeErr := m.Close()
	t.Logf("Close while stalled: %v", closeErr)
	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	_, st, err := other.GetData(ctx, path)
	require.NoError(t, err, "Close deleted the node of another process's member of the same id")
	require.Equal(t, before.Czxid, st.Czxid, "Close deleted the node of another process's member of the same id (it made it again)")
	require.NoError(t, theirs.Close())
}
