package atomic_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/zktest"
)

// The first increment of a missing counter creates it; the server applies the create and
// its reply is lost with the connection. Someone resets the counter (deletes it) before
// the client sends the create again (the resend is held in the request hook while the
// reset is made), and the resend makes the node a second time. The package doc: "A write
// whose connection was lost ... while it was in flight may or may not have been applied
// ... Such a call returns an error matching ErrUnknownOutcome". The increment was applied
// twice (the reset is lost); it must not be reported as one clean success.
func TestIncrementWhoseCreateIsSentAgainAfterAResetIsNotASuccess(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/counters/resent-create"
	_, err := other.Create(ctx, "/counters", nil) // so that the next create is the counter's
	require.NoError(t, err)

	var (
		mu      sync.Mutex
		armed   bool
		creates int
		reset   error
		resetOK bool
	)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(func(op string) {
		mu.Lock()
		defer mu.Unlock()
		if !armed || op != "create" {
			return
		}
		creates++
		if creates == 2 { // the resend, not sent yet: the first create was applied; reset it
			data, _, err := other.GetData(ctx, path)
			if err == nil && len(data) == 8 && data[7] == 1 {
				reset = other.Delete(ctx, path)
				resetOK = reset == nil
			} else {
				reset = err
			}
		}
	}))
	l, err := atomic.NewLong(c, path)
	require.NoError(t, err)

	mu.Lock()
	armed = true
	mu.Unlock()
	proxy.DropNextCreateReply()
	r, err := l.Increment(context.WithoutCancel(ctx))

	mu.Lock()
	sentTwice, wasReset, resetErr := creates >= 2, resetOK, reset
	mu.Unlock()
	require.True(t, sentTwice, "the create was not sent again (creates seen: %d; result %+v, %v)", creates, r, err)
	require.True(t, wasReset, "the first create was not found applied and reset before the resend: %v", resetErr)
	data, _, gerr := other.GetData(ctx, path)
	require.NoError(t, gerr)
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 1}, data, "the resend made the node again")
	assert.ErrorIs(t, err, atomic.ErrUnknownOutcome,
		"one Increment made the counter twice (its create applied, reset by another, sent again and applied): reported as %+v, %v", r, err)
	assert.False(t, r.Succeeded, "an increment applied twice reported as one success (Pre %d, Post %d)", r.Pre, r.Post)
}

// A TrySet of a missing value creates its node, as an increment of a missing counter
// does: a create whose reply was lost, sent again after someone deleted the node its first
// attempt made, makes the node a second time. The TrySet was applied twice (the deletion
// is lost): it must not be reported as one clean success.
func TestTrySetWhoseCreateIsSentAgainAfterADeleteIsNotASuccess(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/values/resent-create"
	_, err := other.Create(ctx, "/values", nil) // so that the next create is the value's
	require.NoError(t, err)

	var (
		mu        sync.Mutex
		armed     bool
		creates   int
		deleted   error
		deletedOK bool
	)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(func(op string) {
		mu.Lock()
		defer mu.Unlock()
		if !armed || op != "create" {
			return
		}
		creates++
		if creates == 2 { // the resend, not sent yet: the first create was applied; delete it
			data, _, err := other.GetData(ctx, path)
			if err == nil && string(data) == "v1" {
				deleted = other.Delete(ctx, path)
				deletedOK = deleted == nil
			} else {
				deleted = err
			}
		}
	}))
	v, err := atomic.NewValue(c, path)
	require.NoError(t, err)

	mu.Lock()
	armed = true
	mu.Unlock()
	proxy.DropNextCreateReply()
	r, err := v.TrySet(context.WithoutCancel(ctx), []byte("v1"))

	mu.Lock()
	sentTwice, wasDeleted, delErr := creates >= 2, deletedOK, deleted
	mu.Unlock()
	require.True(t, sentTwice, "the create was not sent again (creates seen: %d; result %+v, %v)", creates, r, err)
	require.True(t, wasDeleted, "the first create was not found applied and deleted before the resend: %v", delErr)
	data, _, gerr := other.GetData(ctx, path)
	require.NoError(t, gerr)
	require.Equal(t, "v1", string(data), "the resend made the node again")
	assert.ErrorIs(t, err, atomic.ErrUnknownOutcome,
		"one TrySet made the value's node twice (its create applied, deleted by another, sent again and applied): reported as %+v, %v", r, err)
	assert.False(t, r.Succeeded, "a TrySet applied twice reported as one success (Pre %q, Post %q)", r.Pre, r.Post)
	assert.Equal(t, "v1", string(r.Post), "Post is the value that may have been written")
}
