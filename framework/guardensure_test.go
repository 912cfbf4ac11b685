package framework_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// GuardedEnsure makes a path and its missing parents while the guard holds (persistent
// nodes), finds an existing path fine, and makes nothing once the owner node is gone:
// the server refuses the first create (ErrFenced), and Check refuses before anything.
func TestGuardedEnsure(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const owner = "/ge/owner"
	_, err := c.Create(ctx, owner, nil, framework.WithParents())
	require.NoError(t, err)
	ended := false
	g := framework.NewGuard(owner, 0, func() bool { return ended })
	require.NoError(t, g.Check())

	require.NoError(t, c.GuardedEnsure(ctx, g, "/ge/a/b/c"))
	st, err := c.Exists(ctx, "/ge/a/b/c")
	require.NoError(t, err)
	require.NotNil(t, st)
	require.Zero(t, st.EphemeralOwner)
	require.NoError(t, c.GuardedEnsure(ctx, g, "/ge/a/b/c"), "an existing path")

	require.NoError(t, c.Delete(ctx, owner))
	err = c.GuardedEnsure(ctx, g, "/ge/x/y")
	require.ErrorIs(t, err, framework.ErrFenced)
	st, err = c.Exists(ctx, "/ge/x")
	require.NoError(t, err)
	require.Nil(t, st, "a parent made after the owner node was gone")

	ended = true
	require.ErrorIs(t, g.Check(), framework.ErrFenced)
	require.ErrorIs(t, c.GuardedEnsure(ctx, g, "/ge/z"), framework.ErrFenced)
	require.ErrorIs(t, c.GuardedEnsure(ctx, g, "bad"), framework.ErrInvalidArgument)

	// A container cannot go in a transaction: a clear refusal, not the server's "api error".
	_, err = c.Transaction(ctx, framework.CreateOp("/ge/container", nil, framework.Container, nil))
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
}

// A guard made by Client.NewGuard checks its node under that client's namespace, whatever
// the namespace of the client that makes the guarded write; the package's NewGuard checks
// under the writing client's.
func TestClientNewGuardAcrossNamespaces(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 30*time.Second)
	a := testutil.Connect(t, srv.ConnectString(), framework.WithNamespace("a"))
	b := testutil.Connect(t, srv.ConnectString(), framework.WithNamespace("b"))
	_, err := a.Create(ctx, "/owner", nil)
	require.NoError(t, err)
	_, err = b.Create(ctx, "/target", []byte("0"))
	require.NoError(t, err)

	bound := a.NewGuard("/owner", 0, nil)
	require.Equal(t, "/owner", bound.Path())
	_, err = b.GuardedTransaction(ctx, bound, framework.SetDataOp("/target", []byte("1"), -1))
	require.NoError(t, err)

	unbound := framework.NewGuard("/owner", 0, nil) // looked for as /b/owner
	_, err = b.GuardedTransaction(ctx, unbound, framework.SetDataOp("/target", []byte("2"), -1))
	require.ErrorIs(t, err, framework.ErrFenced)

	require.NoError(t, a.Delete(ctx, "/owner"))
	_, err = b.GuardedTransaction(ctx, bound, framework.SetDataOp("/target", []byte("3"), -1))
	require.ErrorIs(t, err, framework.ErrFenced)
	data, _, err := b.GetData(ctx, "/target")
	require.NoError(t, err)
	require.Equal(t, "1", string(data))
}
