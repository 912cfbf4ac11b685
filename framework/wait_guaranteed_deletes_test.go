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

// A protected create given up on (ctx ended) before its request goroutine
// handed the create to the connection. Create queues the prefix sweep at once; the sweep
// lists the parent before the create goes out, finds nothing, and the worker goes idle:
// WaitGuaranteedDeletes returns nil although the given-up create is still to be applied.
// The request goroutine's delay is made deterministic by holding it in WithOnSend (what
// any scheduling delay between callAt's `go` and conn.Create amounts to on a loaded host).
// A second client's children watch, set after WaitGuaranteedDeletes returned, then sees the
// node of the given-up create appear.
func TestWaitGuaranteedDeletesWaitsForGivenUpProtectedCreate(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	peer := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/wgd", nil)
	require.NoError(t, err)

	gate := make(chan struct{})
	sent := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, err = c.Create(cctx, "/wgd/lock-", nil, framework.WithMode(framework.EphemeralSequential),
		framework.WithProtection(), framework.WithOnSend(func() {
			cancel()
			<-gate // the request goroutine is descheduled before conn.Create
			close(sent)
		}))
	require.ErrorIs(t, err, context.Canceled)
	waited := make(chan error, 1)
	go func() { waited <- c.WaitGuaranteedDeletes(ctx) }()
	select {
	case err := <-waited:
		require.NoError(t, err)
		select {
		case <-sent:
		default:
			close(gate)
			<-sent
			require.Fail(t, "WaitGuaranteedDeletes returned nil while the given-up protected create was not even sent yet")
		}
	case <-time.After(2 * time.Second): // liveness only: a correct WaitGuaranteedDeletes waits for the gate
		close(gate)
		require.NoError(t, <-waited)
	}
	// Whatever WaitGuaranteedDeletes waited for, nothing of the given-up create is left now.
	kids, _, err := peer.Children(ctx, "/wgd")
	require.NoError(t, err)
	require.Empty(t, kids, "the given-up create's node is there after WaitGuaranteedDeletes returned")
}
