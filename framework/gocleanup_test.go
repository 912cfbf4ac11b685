package framework_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// WaitGuaranteedDeletes waits for a cleanup started with GoCleanup until it returns, and
// a closed client runs none.
func TestWaitGuaranteedDeletesWaitsForGoCleanup(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	release := make(chan struct{})
	require.True(t, c.GoCleanup(func() { <-release }))
	waited := make(chan error, 1)
	go func() { waited <- c.WaitGuaranteedDeletes(ctx) }()
	select {
	case err := <-waited:
		t.Fatalf("WaitGuaranteedDeletes returned (%v) while a cleanup runs", err)
	default:
	}
	close(release)
	require.NoError(t, <-waited)

	other, err := framework.New(srv.ConnectString())
	require.NoError(t, err)
	require.NoError(t, other.Start())
	require.NoError(t, other.Close())
	require.False(t, other.GoCleanup(func() { t.Error("a closed client ran a cleanup") }))
}
