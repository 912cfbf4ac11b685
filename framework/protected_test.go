package framework_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// A protected ephemeral create whose reply is lost looks for its node by its protected
// prefix. A node found there that another live session owns is not this client's (its
// own would be of its own session, or gone with an expired one): the create neither
// takes it for its own nor deletes it. Here another client deletes the node the first
// attempt made and makes its own under the same name, before the client hears anything.
func TestProtectedCreateLeavesAnotherSessionsNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const parent = "/protected-other"
	_, err := other.Create(ctx, parent, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Delete(context.Background(), parent, framework.WithChildren(), framework.Quietly()) })

	before := proxy.Forwarded()
	proxy.HoldReplies()
	type result struct {
		path string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		p, err := c.Create(ctx, parent+"/n-", []byte("mine"), framework.WithMode(framework.EphemeralSequential), framework.WithProtection())
		done <- result{p, err}
	}()
	require.Eventually(t, func() bool { return proxy.Forwarded() > before }, 30*time.Second, time.Millisecond,
		"the create did not reach the server")
	var made string
	require.Eventually(t, func() bool {
		kids, _, err := other.Children(ctx, parent)
		if err == nil && len(kids) == 1 {
			made = parent + "/" + kids[0]
		}
		return made != ""
	}, 30*time.Second, 10*time.Millisecond, "the first attempt's node")
	require.True(t, framework.IsProtectedName(framework.NodeName(made)), made)
	_, err = other.Transaction(ctx, framework.DeleteOp(made, -1),
		framework.CreateOp(made, []byte("other's"), framework.Ephemeral, nil))
	require.NoError(t, err)
	st, err := other.Exists(ctx, made)
	require.NoError(t, err)
	require.NotNil(t, st)
	proxy.DropConnections()
	proxy.Heal()

	var res result
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the create did not return")
	}
	assert.NotEqual(t, made, res.path, "the create returned the other session's node as its own (err %v)", res.err)
	now, err := other.Exists(ctx, made)
	require.NoError(t, err)
	require.NotNil(t, now, "the client deleted the node another session made under its protected name")
	assert.Equal(t, st.Czxid, now.Czxid)
	if res.err == nil {
		assert.True(t, strings.HasPrefix(res.path, parent+"/"), res.path)
		assert.NoError(t, c.Delete(ctx, res.path))
	}
}

// A protected ephemeral create whose reply is lost and which is not retried leaves the
// sweep of its protected name to the background. A node another session made under that
// name meanwhile is not the create's: the sweep leaves it.
func TestProtectedCreateSweepLeavesAnotherSessionsNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	noRetry, err := retry.NewNTimes(0, 0)
	require.NoError(t, err)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second),
		framework.WithRetryPolicy(noRetry))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const parent = "/protected-sweep-other"
	_, err = other.Create(ctx, parent, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Delete(context.Background(), parent, framework.WithChildren(), framework.Quietly()) })

	before := proxy.Forwarded()
	proxy.HoldReplies()
	done := make(chan error, 1)
	go func() {
		_, err := c.Create(ctx, parent+"/n-", []byte("mine"), framework.WithMode(framework.EphemeralSequential), framework.WithProtection())
		done <- err
	}()
	require.Eventually(t, func() bool { return proxy.Forwarded() > before }, 30*time.Second, time.Millisecond,
		"the create did not reach the server")
	var made string
	require.Eventually(t, func() bool {
		kids, _, err := other.Children(ctx, parent)
		if err == nil && len(kids) == 1 {
			made = parent + "/" + kids[0]
		}
		return made != ""
	}, 30*time.Second, 10*time.Millisecond, "the create's node")
	_, err = other.Transaction(ctx, framework.DeleteOp(made, -1),
		framework.CreateOp(made, []byte("other's"), framework.Ephemeral, nil))
	require.NoError(t, err)
	st, err := other.Exists(ctx, made)
	require.NoError(t, err)
	require.NotNil(t, st)
	proxy.DropConnections()
	proxy.Heal()

	select {
	case err = <-done:
		require.Error(t, err, "the create, not retried, cannot know its outcome")
	case <-time.After(60 * time.Second):
		t.Fatal("the create did not return")
	}
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	now, err := other.Exists(ctx, made)
	require.NoError(t, err)
	require.NotNil(t, now, "the sweep of the create's protected name deleted the node another session made under it")
	assert.Equal(t, st.Czxid, now.Czxid)
}
