package leader_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// A term's guard names the latch node with the latch client's namespace: a write under it
// through a client of another namespace passes while the term lasts (before, it checked
// the node under the writer's namespace, where it never is, and was refused as fenced).
func TestTermGuardAcrossNamespaces(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 30*time.Second)
	elect := testutil.Connect(t, srv.ConnectString(), framework.WithNamespace("elect"))
	data := testutil.Connect(t, srv.ConnectString(), framework.WithNamespace("data"))
	const target = "/value"
	_, err := data.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	l, err := leader.NewLatch(elect, "/guard-ns/latch", "a")
	require.NoError(t, err)
	require.NoError(t, l.Start(ctx))
	defer func() { require.NoError(t, l.Close()) }()
	require.NoError(t, l.Await(ctx))
	term, err := l.Term()
	require.NoError(t, err)
	g, err := term.Guard()
	require.NoError(t, err)
	_, err = data.GuardedTransaction(ctx, g, framework.SetDataOp(target, []byte("leader"), -1))
	require.NoError(t, err, "a write under a held term's guard, through a client of another namespace, was refused")
	b, _, err := data.GetData(ctx, target)
	require.NoError(t, err)
	require.Equal(t, "leader", string(b))
}
