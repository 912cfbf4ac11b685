package doublebarrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// curatorDo runs a Curator command and returns its result.
func curatorDo(t testing.TB, ctx context.Context, tool *curatortest.Tool, format string, args ...any) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := tool.Do(cctx, format, args...)
	require.NoError(t, err, format, args)
	return out
}

// curatorDone waits for an async Curator command and checks that it answered "true".
func curatorDone(t testing.TB, ctx context.Context, tool *curatortest.Tool, tag string) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ans, err := tool.WaitDone(cctx, tag)
	require.NoError(t, err, tag)
	require.Equal(t, "true", ans, tag)
}

// curatorNotDone fails the test if the async Curator command finishes within d.
func curatorNotDone(t testing.TB, ctx context.Context, tool *curatortest.Tool, tag string, d time.Duration) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	ans, err := tool.WaitDone(cctx, tag)
	require.ErrorIs(t, err, context.DeadlineExceeded, "%s finished early: %q", tag, ans)
}

// Two Go and two Curator members, memberQty 4: nobody enters before the fourth arrives,
// whichever side it is on; they leave together; nothing is left.
func TestMixedWithCurator(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	j1 := curatortest.Start(t, srv.ConnectString(), curatortest.WithName("J1"))
	j2 := curatortest.Start(t, srv.ConnectString(), curatortest.WithName("J2"))
	c1, c2 := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)

	for _, last := range []string{"curator", "go"} {
		t.Run(last+" arrives last", func(t *testing.T) {
			path := "/interop/dbarrier-" + last
			g1, g2 := newMember(t, c1, path, 4), newMember(t, c2, path, 4)
			curatorDo(t, ctx, j1, "dbarrier.new d-%s %s 4", last, path)
			curatorDo(t, ctx, j2, "dbarrier.new d-%s %s 4", last, path)

			r1 := testutil.Go(ctx, g1.Enter)
			require.NoError(t, j1.Async(ctx, "in1-"+last, "dbarrier.enter d-%s -1", last))
			var r2 <-chan error
			if last == "curator" {
				r2 = testutil.Go(ctx, g2.Enter)
			} else {
				require.NoError(t, j2.Async(ctx, "in2-"+last, "dbarrier.enter d-%s -1", last))
			}
			waitChildren(t, srv.ConnectString(), path, 3)
			testutil.NotYet(t, r1, 300*time.Millisecond, "Go Enter with three members out of four")
			curatorNotDone(t, ctx, j1, "in1-"+last, 100*time.Millisecond)

			if last == "curator" {
				curatorDo(t, ctx, j2, "dbarrier.enter d-%s 20000", last)
				require.NoError(t, testutil.Result(t, r2, 10*time.Second, "Go Enter"))
			} else {
				require.NoError(t, g2.Enter(ctx))
				curatorDone(t, ctx, j2, "in2-"+last)
			}
			require.NoError(t, testutil.Result(t, r1, 10*time.Second, "Go Enter"))
			curatorDone(t, ctx, j1, "in1-"+last)

			kids := testutil.Children(t, srv.ConnectString(), path)
			require.Len(t, kids, 5, "four members and ready: %v", kids)
			for _, k := range kids {
				if k != "ready" {
					assert.Regexp(t, memberRE, k)
				}
			}
			assert.Contains(t, kids, framework.NodeName(g1.Node()))
			assert.Contains(t, kids, framework.NodeName(g2.Node()))

			// Leave: three start, the fourth (on the other side this time) comes last.
			l1 := testutil.Go(ctx, g1.Leave)
			require.NoError(t, j1.Async(ctx, "out1-"+last, "dbarrier.leave d-%s -1", last))
			var l2 <-chan error
			if last == "curator" {
				l2 = testutil.Go(ctx, g2.Leave)
			} else {
				require.NoError(t, j2.Async(ctx, "out2-"+last, "dbarrier.leave d-%s -1", last))
			}
			testutil.NotYet(t, l1, 300*time.Millisecond, "Go Leave with one member inside")
			curatorNotDone(t, ctx, j1, "out1-"+last, 100*time.Millisecond)
			if last == "curator" {
				curatorDo(t, ctx, j2, "dbarrier.leave d-%s 20000", last)
				require.NoError(t, testutil.Result(t, l2, 10*time.Second, "Go Leave"))
			} else {
				require.NoError(t, g2.Leave(ctx))
				curatorDone(t, ctx, j2, "out2-"+last)
			}
			require.NoError(t, testutil.Result(t, l1, 10*time.Second, "Go Leave"))
			curatorDone(t, ctx, j1, "out1-"+last)
			assertNoMembers(t, srv.ConnectString(), path, c1, c2)
		})
	}
}
