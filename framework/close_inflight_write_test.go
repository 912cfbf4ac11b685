package framework_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// WithResent: "sets *resent, once Create has tried the create, to whether an attempt of
// it may have been applied unanswered: its connection was lost, or its wait for the
// answer given up, while it was in flight". Close gives up the wait of a create in
// flight: the server applied it, and Create must not say that no attempt may have been.
func TestCreateInFlightAtCloseReportsResent(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	other := testutil.Connect(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	before := proxy.Forwarded()
	proxy.HoldReplies()
	resent := false
	done := make(chan error, 1)
	go func() {
		_, err := c.Create(ctx, "/made-at-close", []byte("x"), framework.WithResent(&resent))
		done <- err
	}()
	require.Eventually(t, func() bool { return proxy.Forwarded() > before }, 30*time.Second, time.Millisecond)
	// The server applied the create; its answer is held.
	require.Eventually(t, func() bool {
		st, err := other.Exists(ctx, "/made-at-close")
		return err == nil && st != nil
	}, 10*time.Second, 5*time.Millisecond, "the create reached the server")
	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Create did not return after Close")
	}
	proxy.Heal()
	<-closed
	t.Logf("create: %v, resent %v", err, resent)
	require.Error(t, err)
	st, xerr := other.Exists(ctx, "/made-at-close")
	require.NoError(t, xerr)
	require.NotNil(t, st, "the create was applied")
	assert.True(t, resent || errorsIsUnknown(err), "a create applied while Close gave up its wait is reported as one that may have been applied (resent %v, err %v)", resent, err)
}

func errorsIsUnknown(err error) bool {
	return err != nil && assertErrorIs(err, framework.ErrUnknownOutcome)
}

func assertErrorIs(err, target error) bool { return errors.Is(err, target) }

// GuardedTransaction's error reads nil when applied, ErrFenced or a *TxnError when
// nothing was, "an error matching ErrUnknownOutcome ... when ctx ended while an attempt
// was in flight", or "ctx's error alone when ctx ended before any attempt was sent
// (nothing applied)". A guarded transaction in flight when the client is closed was
// applied by the server; its error must say that it may have been (ErrUnknownOutcome),
// not just that the client closed.
func TestGuardedTransactionInFlightAtCloseReportsUnknown(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	other := testutil.Connect(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Create(ctx, "/owner", nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/value", []byte("0"))
	require.NoError(t, err)
	g := c.NewGuard("/owner", 0, nil)

	before := proxy.Forwarded()
	proxy.HoldReplies()
	done := make(chan error, 1)
	go func() {
		_, err := c.GuardedTransaction(ctx, g, framework.SetDataOp("/value", []byte("1"), 0))
		done <- err
	}()
	require.Eventually(t, func() bool { return proxy.Forwarded() > before }, 30*time.Second, time.Millisecond)
	require.Eventually(t, func() bool {
		d, _, err := other.GetData(ctx, "/value")
		return err == nil && string(d) == "1"
	}, 10*time.Second, 5*time.Millisecond, "the transaction reached the server and was applied")
	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("GuardedTransaction did not return after Close")
	}
	proxy.Heal()
	<-closed
	t.Logf("guarded transaction applied, returned: %v", err)
	require.Error(t, err)
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome, "an applied write is not reported as one that failed")
}
