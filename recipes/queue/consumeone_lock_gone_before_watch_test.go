package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestConsumeOneTakesItemFreedBeforeItsLockWasWatched: the package doc promises, with a
// lock path, that a consumer that finds an item's lock node taken "moves on, watching it.
// When it goes (its holder finished, or died ...), the consumer lists the queue again
// (Consume after the item in hand, ConsumeOne at its next call), so that the item is taken
// in its place in the queue's order".
//
// A lone consumer's ConsumeOne works through the listing its last call kept: z was taken,
// a, b, c are left. Another consumer holds a's lock node. The consumer's create of a's lock
// node is answered "exists" (its reply held at the proxy until the other consumer gave a
// back: lock node deleted, item left), so its watch on a's lock node finds it gone. It
// moves on and takes b: fine. a is free since: the next ConsumeOne must take a, not c.
func TestConsumeOneTakesItemFreedBeforeItsLockWasWatched(t *testing.T) {
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	qpath, lpath := uniq("/lockgonebeforewatch/q"), uniq("/lockgonebeforewatch/locks")
	q, err := queue.New(c, qpath, queue.String{}, queue.WithLockPath(lpath))
	require.NoError(t, err)
	var names []string
	for _, it := range []string{"z", "a", "b", "c"} {
		p, err := q.Put(ctx, it)
		require.NoError(t, err)
		names = append(names, p)
	}
	var got collector
	require.NoError(t, q.ConsumeOne(ctx, got.handle)) // z; a, b, c kept for the next call
	require.Equal(t, []string{"z"}, got.items())

	// Another consumer holds a.
	aLock := framework.JoinPath(lpath, framework.NodeName(names[1]))
	_, err = other.Create(ctx, aLock, []byte("other consumer"), framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	proxy.HoldReplies()
	before := proxy.Forwarded()
	done := make(chan error, 1)
	go func() { done <- q.ConsumeOne(ctx, got.handle) }()
	require.Eventually(t, func() bool { return proxy.Forwarded() > before }, 10*time.Second, time.Millisecond,
		"the consumer's create of a's lock node never reached the server")
	// The other consumer gives a back: its lock node goes, the item stays.
	require.NoError(t, other.Delete(ctx, aLock))
	proxy.Heal()
	require.NoError(t, testutil.Result(t, done, 20*time.Second, "the second ConsumeOne"))
	require.Equal(t, []string{"z", "b"}, got.items(), "setup: the consumer was to find a locked and take b")

	st, err := other.Exists(ctx, names[1])
	require.NoError(t, err)
	require.NotNil(t, st, "a is still in the queue")
	kids := testutil.Children(t, srv.ConnectString(), lpath)
	require.Empty(t, kids, "nobody holds a")

	require.NoError(t, q.ConsumeOne(ctx, got.handle))
	require.Equal(t, []string{"z", "b", "a"}, got.items(),
		"a, free (its lock node gone, the item in the queue) before this ConsumeOne began, was passed over for c")
}
