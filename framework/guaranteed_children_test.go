package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// Guaranteed: "hands a delete that failed for a connection-class reason (... or ctx
// ending while the request may have been in flight) to the client's background worker,
// which keeps deleting until the node is gone or the client closes". A guaranteed delete
// WithChildren (accepted: only InBackground refuses WithChildren) whose caller's ctx ends
// while it lists the node's children is handed over; the node must then be gone.
func TestGuaranteedDeleteWithChildrenDeletesNode(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	other := testutil.Connect(t, srv.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := other.Create(ctx, "/tree/a", nil, framework.WithParents())
	require.NoError(t, err)
	_, err = other.Create(ctx, "/tree/b", nil)
	require.NoError(t, err)

	before := proxy.Forwarded()
	proxy.HoldReplies()
	dctx, dcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Delete(dctx, "/tree", framework.WithChildren(), framework.Guaranteed()) }()
	require.Eventually(t, func() bool { return proxy.Forwarded() > before }, 30*time.Second, time.Millisecond,
		"the delete's first request (the listing of the children) reached the server")
	dcancel()
	err = <-done
	proxy.Heal()
	t.Logf("delete: %v", err)
	require.ErrorIs(t, err, context.Canceled)

	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	require.NoError(t, c.WaitGuaranteedDeletes(wctx))
	st, err := other.Exists(ctx, "/tree")
	require.NoError(t, err)
	kids, _, _ := other.Children(ctx, "/tree")
	assert.Nil(t, st, "the guaranteed delete went on in the background until the node was gone (its children: %v)", kids)
}
