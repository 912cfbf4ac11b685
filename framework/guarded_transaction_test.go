package framework_test

import (
	"context"
	"sync"
	stdatomic "sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A guarded transaction whose first attempt was applied (its reply lost with the
// connection) and whose resend fails on the caller's own op (BadVersion: the first
// attempt bumped the version) reports ErrUnknownOutcome, as it should; but the *TxnError
// it carries counts the guard's checks, which the caller never put in: Index and N are
// those of the transaction sent, so ops[te.Index] is out of range for a one-op call.
// GuardedTransaction's doc gives the caller's index for a failed op of ops.
func TestGuardedTransactionUnknownOutcomeTxnErrorIndexesTheCallersOps(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var (
		mu    sync.Mutex
		armed bool
	)
	c1 := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second),
		framework.WithRequestHook(func(op string) {
			mu.Lock()
			defer mu.Unlock()
			if armed && op == "multi" {
				armed = false
				proxy.HoldReplies() // before the multi goes out: its reply is held
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const owner, target = "/guardedtxn/owner", "/guardedtxn/target"
	_, err := other.Create(ctx, owner, nil, framework.WithParents())
	require.NoError(t, err)
	_, err = other.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	g := framework.NewGuard(owner, 0, nil)
	ops := []framework.Op{framework.SetDataOp(target, []byte("1"), 0)}

	mu.Lock()
	armed = true
	mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := c1.GuardedTransaction(ctx, g, ops...)
		done <- err
	}()
	require.Eventually(t, func() bool {
		_, st, err := other.GetData(ctx, target)
		return err == nil && st.Version == 1
	}, 20*time.Second, 10*time.Millisecond, "the first attempt was not applied")
	proxy.DropConnections() // the reply is lost; the client sends the multi again
	proxy.Heal()
	var got error
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("GuardedTransaction did not return")
	}
	require.ErrorIs(t, got, framework.ErrUnknownOutcome)
	require.ErrorIs(t, got, framework.ErrBadVersion)
	var te *framework.TxnError
	require.ErrorAs(t, got, &te)
	require.Equalf(t, len(ops), te.N, "TxnError.N counts the guard's check: %v", got)
	require.Lessf(t, te.Index, len(ops), "TxnError.Index %d is out of range of the caller's %d ops: %v", te.Index, len(ops), got)
}

// A guarded transaction called with a context already ended sends nothing (Transaction
// returns the context's error before any attempt), yet GuardedTransaction reports it as
// ErrUnknownOutcome ("may have been applied"): its doc gives that answer only to a
// transaction in flight when ctx ended. A guarded queue Put or atomic change reports the
// same for a write never sent (the unguarded one reports ctx's error).
func TestGuardedTransactionNotSentIsNotUnknown(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	var multis stdatomic.Int32
	c := testutil.Connect(t, srv.ConnectString(), framework.WithRequestHook(func(op string) {
		if op == "multi" {
			multis.Add(1)
		}
	}))
	ctx := testutil.Context(t, 30*time.Second)
	const owner, target = "/guardedtxn/owner2", "/guardedtxn/target2"
	_, err := c.Create(ctx, owner, nil, framework.WithParents())
	require.NoError(t, err)
	_, err = c.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	g := framework.NewGuard(owner, 0, nil)

	ended, cancel := context.WithCancel(ctx)
	cancel()
	_, plain := c.Transaction(ended, framework.SetDataOp(target, []byte("1"), -1))
	require.ErrorIs(t, plain, context.Canceled)
	require.NotErrorIs(t, plain, framework.ErrUnknownOutcome, "negative control: Transaction")
	_, err = c.GuardedTransaction(ended, g, framework.SetDataOp(target, []byte("1"), -1))
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, multis.Load(), "nothing was sent")
	require.NotErrorIsf(t, err, framework.ErrUnknownOutcome, "a transaction never sent is reported as of unknown outcome: %v", err)
}
