package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A guarded transaction is applied while the owner node exists and refused by the server
// once it is gone; the same transaction without the guard is applied (negative control).
func TestGuardedTransactionRefusedOnceOwnerGone(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const owner, target = "/guard/owner", "/guard/target"
	_, err := c.Create(ctx, owner, nil, framework.WithMode(framework.Ephemeral), framework.WithParents())
	require.NoError(t, err)
	_, err = c.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	st, err := c.Exists(ctx, owner)
	require.NoError(t, err)
	g := framework.NewGuard(owner, st.Czxid, nil)
	require.Equal(t, owner, g.Path())
	require.Equal(t, st.Czxid, g.Czxid())
	require.Equal(t, []framework.Op{framework.CheckOp(owner, -1)}, g.Ops())

	res, err := c.GuardedTransaction(ctx, g, framework.SetDataOp(target, []byte("1"), -1))
	require.NoError(t, err)
	require.Len(t, res, 1, "the results are the ops', without the guard's check")
	require.EqualValues(t, 1, res[0].Stat.Version)

	// A failed op of the caller's keeps its own index.
	_, err = c.GuardedTransaction(ctx, g, framework.SetDataOp(target, []byte("x"), 7))
	var te *framework.TxnError
	require.ErrorAs(t, err, &te)
	require.Equal(t, 0, te.Index)
	require.ErrorIs(t, err, framework.ErrBadVersion)
	require.NotErrorIs(t, err, framework.ErrFenced)

	require.NoError(t, c.Delete(ctx, owner))
	_, err = c.GuardedTransaction(ctx, g, framework.SetDataOp(target, []byte("2"), -1))
	require.ErrorIs(t, err, framework.ErrFenced)
	require.NotErrorIs(t, err, framework.ErrUnknownOutcome)
	data, _, err := c.GetData(ctx, target)
	require.NoError(t, err)
	require.Equal(t, "1", string(data), "the server applied a write whose guard's node was gone")

	// Negative control: the same write without the guard is applied.
	_, err = c.Transaction(ctx, framework.SetDataOp(target, []byte("2"), -1))
	require.NoError(t, err)
	data, _, err = c.GetData(ctx, target)
	require.NoError(t, err)
	require.Equal(t, "2", string(data))
}

// A guard whose lease ended refuses before anything is sent.
func TestGuardEndedRefusesBeforeSending(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const target = "/guard/ended"
	_, err := c.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	ended := false
	g := framework.NewGuard(target, 0, func() bool { return ended })
	_, err = c.GuardedTransaction(ctx, g, framework.SetDataOp(target, []byte("1"), -1))
	require.NoError(t, err)
	ended = true
	before := c.Requests()
	_, err = c.GuardedTransaction(ctx, g, framework.SetDataOp(target, []byte("2"), -1))
	require.ErrorIs(t, err, framework.ErrFenced)
	require.Equal(t, before, c.Requests(), "a request was sent for an ended guard")

	// Joined guards: either ending refuses; WithGuard joins them.
	ended = false
	other := false
	joined := framework.WithGuard(framework.WithGuard(ctx, g), framework.NewGuard("", 0, func() bool { return other }))
	jg, ok := framework.GuardFrom(joined)
	require.True(t, ok)
	require.Len(t, jg.Ops(), 1, "a guard without a node adds no check")
	_, err = c.GuardedTransaction(ctx, jg, framework.SetDataOp(target, []byte("3"), -1))
	require.NoError(t, err)
	other = true
	_, err = c.GuardedTransaction(ctx, jg, framework.SetDataOp(target, []byte("4"), -1))
	require.ErrorIs(t, err, framework.ErrFenced)
	_, ok = framework.GuardFrom(framework.WithGuard(context.Background(), framework.Guard{}))
	require.False(t, ok, "the zero Guard is no guard")
}

// A guarded write applied by the server whose reply was lost, sent again after its owner
// node went: the resent transaction's refusal is not a refusal of the write (the first
// attempt was applied, while the owner node existed): ErrUnknownOutcome, never ErrFenced.
func TestGuardedTransactionResentAfterOwnerGoneIsUnknown(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := testutil.Connect(t, proxy.ConnectString())
	cb := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const owner, target = "/guard/resent-owner", "/guard/resent-target"
	_, err := cb.Create(ctx, owner, nil, framework.WithParents())
	require.NoError(t, err)
	_, err = cb.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	g := framework.NewGuard(owner, 0, nil)

	proxy.HoldReplies()
	errc := make(chan error, 1)
	go func() {
		_, err := ca.GuardedTransaction(ctx, g, framework.SetDataOp(target, []byte("A"), -1))
		errc <- err
	}()
	require.Eventually(t, func() bool {
		data, _, err := cb.GetData(ctx, target)
		return err == nil && string(data) == "A"
	}, 20*time.Second, 20*time.Millisecond, "the guarded write was not applied")
	require.NoError(t, cb.Delete(ctx, owner)) // the lease ends after the write was applied
	proxy.DropConnections()
	proxy.Heal()
	err = <-errc
	require.ErrorIs(t, err, framework.ErrUnknownOutcome)
	require.ErrorIs(t, err, framework.ErrNoNode, "the resent transaction found the owner node gone")
	require.NotErrorIs(t, err, framework.ErrFenced, "a write that was applied reported as refused")
}
