package groupmember_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

func ido(t *testing.T, ctx context.Context, tool *curatortest.Tool, format string, args ...any) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := tool.Do(cctx, format, args...)
	require.NoError(t, err, format, args)
	return out
}

// A Go GroupMember and a Curator GroupMember on the same path each see the other, with
// payload changes; when one leaves, the other sees it go.
func TestInteropCurator(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	tool := curatortest.Start(t, srv.ConnectString(), curatortest.WithSessionTimeout(4*time.Second))
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)
	const g = "/interop/group"

	ido(t, ctx, tool, "group.new j %s java pj", g)
	gm := join(t, c, g, "go", "pg")
	waitMembers(t, gm, map[string]string{"go": "pg", "java": "pj"})
	waitJava := func(want string) {
		t.Helper()
		require.Eventually(t, func() bool { return ido(t, ctx, tool, "group.members j") == want },
			30*time.Second, 20*time.Millisecond, "Curator's GroupMember never saw %q", want)
	}
	waitJava("go=pg java=pj")

	require.NoError(t, gm.SetThisData(ctx, []byte("pg2")))
	waitJava("go=pg2 java=pj")
	ido(t, ctx, tool, "group.setdata j pj2")
	waitMembers(t, gm, map[string]string{"go": "pg2", "java": "pj2"})

	ido(t, ctx, tool, "group.close j")
	waitMembers(t, gm, map[string]string{"go": "pg2"})
	require.NoError(t, gm.Close())
	testutil.RequireNoChildren(t, srv.ConnectString(), g)
}
