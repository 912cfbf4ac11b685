package doublebarrier_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// gate is a client's request hook (framework.WithRequestHook) that makes the moments of a
// failure test deterministic. It runs on the goroutine that sends each request, before
// the request is sent, so it can tell the member's own calls (Enter, Leave) from the
// client's background work (its guaranteed-delete worker, or any goroutine a recipe
// leaves behind), and:
//   - holds the background work's requests, once hold was called, until open: a
//     queued delete then runs exactly when the test lets it;
//   - runs a function at the nth request of an operation ("delete", "multi") that a
//     Leave sends, before it is sent.
type gate struct {
	mu       sync.Mutex
	holding  bool
	leaveOps map[string]int // requests a Leave sent, per operation
	at       map[string]map[int]func()
	opened   chan struct{}
	openOnce sync.Once
}

func newGate() *gate {
	return &gate{leaveOps: map[string]int{}, at: map[string]map[int]func(){}, opened: make(chan struct{})}
}

// onLeave runs fn at the nth request of operation op (1-based) that a Leave sends, before
// it is sent. The last member's Leave deletes its node and ready in one transaction
// ("multi"); the others' delete their node ("delete").
func (g *gate) onLeave(op string, n int, fn func()) {
	g.mu.Lock()
	if g.at[op] == nil {
		g.at[op] = map[int]func(){}
	}
	g.at[op][n] = fn
	g.mu.Unlock()
}

// hold starts holding the background work's requests until open.
func (g *gate) hold() {
	g.mu.Lock()
	g.holding = true
	g.mu.Unlock()
}

// open lets the held requests go, and every later one. It may be called more than once;
// register it as a cleanup after the client's, so that it runs before the client closes.
func (g *gate) open() { g.openOnce.Do(func() { close(g.opened) }) }

func (g *gate) hook(op string) {
	buf := make([]byte, 64<<10)
	stack := string(buf[:runtime.Stack(buf, false)])
	inLeave := strings.Contains(stack, "(*DoubleBarrier).Leave")
	inCall := inLeave || strings.Contains(stack, "(*DoubleBarrier).Enter")
	g.mu.Lock()
	var fn func()
	if inLeave {
		g.leaveOps[op]++
		fn = g.at[op][g.leaveOps[op]]
	}
	holding := g.holding && !inCall
	g.mu.Unlock()
	if fn != nil {
		fn()
	}
	if holding {
		<-g.opened // the test opens the gate at the latest in its cleanup
	}
}

// A member's Leave hands the delete of its node to the client's guaranteed-delete worker
// (the request was in flight when Leave's context ended: its outcome is unknown). The
// member's next Enter must not lose its node to that queued job when the job runs after
// it.
func TestQueuedDeleteSparesNextEnter(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	g := newGate()
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(g.hook))
	t.Cleanup(g.open)
	checker := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/queued-member"
	b := newMember(t, c, path, 1)
	require.NoError(t, b.Enter(ctx))
	first := b.Node()
	old, err := checker.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, old, "the round's ready")

	// Leave's delete of our node (the only member: its transaction deleting its node and
	// ready) is held by the stalled proxy, and Leave's context ends meanwhile: the
	// cleanup (the transaction again) is queued, and held at the gate. Leave returns at
	// once (its context ended: its cleanup is queued, not sent).
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	g.onLeave("multi", 1, func() { proxy.Stall(); g.hold(); lcancel() })
	left := testutil.Go(lctx, b.Leave)
	require.ErrorIs(t, testutil.Result(t, left, 20*time.Second, "Leave"), context.Canceled)
	proxy.Heal()
	require.NotEqual(t, first, b.Node(), "a member whose delete is queued takes a new name")

	// The next Enter, then the queued job runs. The held transaction may reach the server
	// after the next Enter's first request (it is handed to the connection on a goroutine
	// of its own): the Enter then goes in by the round's ready, the Leave's node still
	// there, and the transaction deletes both; otherwise the Enter makes a ready of its own.
	require.NoError(t, b.Enter(ctx))
	cur, err := checker.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	g.open()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	st, err := checker.Exists(ctx, b.Node())
	require.NoError(t, err)
	require.NotNil(t, st, "the node %s of the member's next Enter was deleted by the delete of %s queued in the Leave before", b.Node(), first)
	st, err = checker.Exists(ctx, first)
	require.NoError(t, err)
	require.Nil(t, st, "the queued delete removed the node of the Leave")
	if cur != nil && cur.Czxid > old.Czxid { // the next Enter's own ready
		st, err = checker.Exists(ctx, path+"/ready")
		require.NoError(t, err)
		require.NotNil(t, st, "the next Enter's ready (czxid %d) was deleted by the cleanup of the Leave before", cur.Czxid)
	}

	require.NoError(t, b.Leave(ctx))
	assertNoMembers(t, srv.ConnectString(), path, c)
}

// waitGone waits until p does not exist, on c's watches.
func waitGone(ctx context.Context, t *testing.T, c *framework.Client, p string) {
	t.Helper()
	for {
		st, w, err := c.ExistsW(ctx, p)
		require.NoError(t, err)
		if st == nil {
			return
		}
		select {
		case <-w.Done():
		case <-ctx.Done():
			t.Fatalf("%s still exists: %v", p, ctx.Err())
		}
	}
}

// The last member to leave deletes ready; when that delete's outcome is unknown (the
// request was in flight when Leave's context ended), whatever keeps trying must not
// delete the ready node of the next round.
func TestQueuedReadyDeleteSparesNextRound(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	g := newGate()
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(g.hook))
	t.Cleanup(g.open)
	checker := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/queued-ready"
	b := newMember(t, c, path, 1)
	require.NoError(t, b.Enter(ctx))
	old, err := checker.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, old)

	// Leave deletes our node and ready in one transaction: it is held by the stalled
	// proxy while Leave's context ends (Leave cannot tell whether its node went), and
	// anything that retries it in the background is held at the gate.
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	g.onLeave("multi", 1, func() { proxy.Stall(); g.hold(); lcancel() })
	require.ErrorIs(t, b.Leave(lctx), context.Canceled)
	proxy.Heal()

	// The held transaction reaches the server (the old ready goes), the next round
	// creates a new ready; then the background work runs.
	waitGone(ctx, t, checker, path+"/ready")
	require.NoError(t, b.Enter(ctx))
	g.open()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.NoError(t, c.Close(), "close the client: wait for every goroutine it runs")
	st, err := checker.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, st, "the next round's ready was deleted by the delete of the round before")
	require.Greater(t, st.Czxid, old.Czxid, "the next round made a ready of its own")

	require.NoError(t, checker.Delete(ctx, path+"/ready"))
	assertNoMembers(t, srv.ConnectString(), path, checker)
}

// When the last member's delete of ready (with its node, in one transaction) never
// reaches the server (the connection drops with the request held, Leave's context ended),
// the background retry deletes both: nothing is left.
func TestQueuedReadyDeleteRemovesThisRound(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	g := newGate()
	var (
		mu        sync.Mutex
		bgDeleted bool
	)
	observe := func(ri framework.RequestInfo) {
		if ri.Op == "multi" && ri.Err == nil {
			mu.Lock()
			bgDeleted = true
			mu.Unlock()
		}
	}
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(g.hook), framework.WithRequestObserver(observe))
	t.Cleanup(g.open)
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/queued-ready-this-round"
	b := newMember(t, c, path, 1)
	require.NoError(t, b.Enter(ctx))

	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	g.onLeave("multi", 1, func() { proxy.Stall(); g.hold(); lcancel() })
	require.ErrorIs(t, b.Leave(lctx), context.Canceled)
	proxy.DropConnections() // the held transaction is lost with the connection
	proxy.Heal()
	g.open()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	mu.Lock()
	// (Not asserted: the held request is handed to the connection on a goroutine of its
	// own, and may reach the server after the drop, before the background retry.)
	t.Logf("member node and ready deleted by the background retry: %v", bgDeleted)
	mu.Unlock()
	assertNoMembers(t, srv.ConnectString(), path, c)
}
