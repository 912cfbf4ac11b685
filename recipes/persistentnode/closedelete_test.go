package persistentnode_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestCloseQueuedDeleteSparesForeignNode: Close's delete fails for a connection reason and goes to the background at version 0;
// meanwhile someone else deletes the node and makes their own (version 0 too): the
// background job must not delete theirs.
func TestCloseQueuedDeleteSparesForeignNode(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var once sync.Once
	hook := func(op string) {
		if op != "delete" {
			return
		}
		buf := make([]byte, 64<<10)
		if strings.Contains(string(buf[:runtime.Stack(buf, false)]), "(*Node).deleteOwn") {
			once.Do(func() { proxy.Refuse(); proxy.DropConnections() })
		}
	}
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(hook))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	n, err := persistentnode.New(c, "/pn/v", []byte("mine"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	require.NoError(t, n.Start())
	require.NoError(t, n.WaitForInitialCreate(ctx))
	t.Logf("Close: %v", n.Close())
	require.NoError(t, other.Delete(ctx, "/pn/v"))
	// With its parents: /pn is a container (the Node made it so), which the server may
	// reap as soon as its last child is gone.
	_, err = other.Create(ctx, "/pn/v", []byte("theirs"), framework.WithParents())
	require.NoError(t, err)
	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	st, err := other.Exists(ctx, "/pn/v")
	require.NoError(t, err)
	require.NotNil(t, st, "someone else's node, made after Close, was deleted by Close's queued delete")
}
