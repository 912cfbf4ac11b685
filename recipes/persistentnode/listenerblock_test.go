package persistentnode_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestNodeKeptWhileListenerBlocks: a listener that is slow to return (it blocks here
// until the test ends) must not stop the Node from keeping its node: the listener runs
// "on a goroutine the library owns", and the node is created again whenever someone
// deletes it. A listener called on the Node's own upkeep goroutine holds that goroutine:
// the node, deleted while the listener hears of its first creation, is not made again.
func TestNodeKeptWhileListenerBlocks(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/pn/listener/blocks"
	n, err := persistentnode.New(c, path, []byte("x"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	entered := make(chan struct{}, 1)
	unblock := make(chan struct{})
	n.AddListener(func(persistentnode.Created) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-unblock
	})
	require.NoError(t, n.Start())
	defer func() { close(unblock); require.NoError(t, n.Close()) }()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the listener did not hear the first creation")
	}
	require.NoError(t, other.Delete(ctx, path))
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := other.Exists(ctx, path)
		require.NoError(t, err)
		if st != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the node deleted while a listener was being told of its creation was not made again within 30 s: the Node's upkeep waits for its listener")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
