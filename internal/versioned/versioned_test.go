package versioned_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/internal/versioned"
	"github.com/zoocurator/zoocurator/zktest"
)

// A versioned set that lost to another writer (the version after the one it expected
// holds other data) is a provable conflict, even when its answer was lost and the client
// sent it again (framework.ErrUnknownOutcome on the client's answer).
func TestProvableConflictAfterResend(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := other.Create(ctx, "/v", []byte("0"))
	require.NoError(t, err)
	_, err = other.SetData(ctx, "/v", []byte("theirs"), 0) // version 1, other data
	require.NoError(t, err)

	before := proxy.Forwarded()
	proxy.HoldReplies()
	done := make(chan error, 1)
	go func() { _, err := versioned.SetData(ctx, c, "/v", []byte("ours"), 0); done <- err }()
	require.Eventually(t, func() bool { return proxy.Forwarded() > before }, 30*time.Second, time.Millisecond,
		"the write did not reach the server")
	proxy.DropConnections()
	proxy.Heal()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("SetData did not return")
	}
	assert.ErrorIs(t, err, versioned.ErrConflict, "version 1 carries other data: ours was not applied")
	assert.NotErrorIs(t, err, versioned.ErrUnknownOutcome)
}
