package leader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

func curator(t testing.TB, connect string) *curatortest.Tool {
	t.Helper()
	return curatortest.Start(t, connect, curatortest.WithSessionTimeout(4*time.Second))
}

func do(t testing.TB, tool *curatortest.Tool, format string, args ...any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := tool.Do(ctx, format, args...)
	require.NoError(t, err, format, args)
	return out
}

func waitEvent(t testing.TB, tool *curatortest.Tool, prefix string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := tool.WaitEvent(ctx, prefix)
	require.NoError(t, err, "Curator event %q", prefix)
}

// A Go latch and a Curator LeaderLatch take turns on one path.
func TestLatchCuratorInterop(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := curator(t, srv.ConnectString())
	cl := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/interop/latch"

	g1 := startLatch(t, cl, path, "go-1")
	await(t, g1, 10*time.Second, "go-1 alone")
	do(t, tool, "latch.new j %s java-1", path)
	do(t, tool, "latch.start j")
	parts := testutil.WaitParticipants(t, g1, 2, 20*time.Second)
	require.Equal(t, []string{"go-1", "java-1"}, ids(parts))
	require.Equal(t, "go-1 java-1", do(t, tool, "latch.participants j"), "Curator agrees on the order")
	require.Equal(t, "go-1", do(t, tool, "latch.leader j"))
	require.Equal(t, "false", do(t, tool, "latch.has j"))
	require.Equal(t, parts[1].Node, do(t, tool, "latch.path j"))
	for _, p := range parts {
		require.Regexp(t, latchNode, framework.NodeName(p.Node))
	}

	// Go closes: Curator leads.
	require.NoError(t, g1.Close())
	waitEvent(t, tool, "leader j true", 10*time.Second)
	require.Equal(t, "true", do(t, tool, "latch.has j"))

	g2 := startLatch(t, cl, path, "go-2")
	parts = testutil.WaitParticipants(t, g2, 2, 20*time.Second)
	require.Equal(t, []string{"java-1", "go-2"}, ids(parts))
	ld, err := g2.Leader(context.Background())
	require.NoError(t, err)
	require.Equal(t, "java-1", ld.ID)
	actx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	require.ErrorIs(t, g2.Await(actx), context.DeadlineExceeded, "Go leads while Curator does")
	cancel()

	// Curator closes (silently): Go leads.
	do(t, tool, "latch.close j")
	await(t, g2, 10*time.Second, "go-2 after Curator's close")
	for _, ev := range tool.Events() {
		require.NotEqual(t, "leader j false", ev, "Curator's silent close tells nothing")
	}
	require.NoError(t, g2.Close())
	assertNoChildren(t, srv.ConnectString(), path, cl)
}

// A Go selector and a Curator mutex on the selector's path (what a Curator LeaderSelector
// is) take turns.
func TestSelectorCuratorInterop(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := curator(t, srv.ConnectString())
	cl := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/interop/selector"
	ctx := testutil.Context(t, 60*time.Second)

	do(t, tool, "mutex.new j %s", path)
	require.Equal(t, "true", do(t, tool, "mutex.acquire j -1"))
	javaNode := do(t, tool, "mutex.node j")

	f, ts := turns("go")
	s := startSelector(t, cl, path, "go-sel", f, leader.AutoRequeue())
	parts := testutil.WaitParticipants(t, s, 2, 20*time.Second)
	require.Equal(t, javaNode, parts[0].Node)
	require.True(t, parts[0].Leader)
	require.Equal(t, "go-sel", parts[1].ID)
	require.Regexp(t, lockNode, framework.NodeName(parts[1].Node))
	require.Equal(t, strings.Join([]string{parts[0].Node, parts[1].Node}, " "), do(t, tool, "mutex.participants j"))
	noTurn(t, ts, 300*time.Millisecond, "while Curator holds")

	do(t, tool, "mutex.release j")
	tr := nextTurn(t, ts, 10*time.Second, "Go after Curator released")
	require.True(t, s.HasLeadership())

	require.NoError(t, tool.Async(ctx, "a1", "mutex.acquire j -1"))
	testutil.WaitParticipants(t, s, 2, 20*time.Second)
	close(tr.release) // Go gives up; Curator is next; Go queues again behind it
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	got, err := tool.WaitDone(dctx, "a1")
	cancel()
	require.NoError(t, err)
	require.Equal(t, "true", got)
	parts = testutil.WaitParticipants(t, s, 2, 20*time.Second)
	require.Equal(t, []string{do(t, tool, "mutex.node j"), parts[1].Node}, []string{parts[0].Node, parts[1].Node})
	require.Equal(t, "go-sel", parts[1].ID)
	noTurn(t, ts, 300*time.Millisecond, "while Curator holds again")

	do(t, tool, "mutex.release j")
	tr = nextTurn(t, ts, 10*time.Second, "Go after Curator released again")
	require.NoError(t, s.Close())
	require.True(t, testutil.IsClosed(tr.ctx.Done()))
	assertNoChildren(t, srv.ConnectString(), path, cl)
}
