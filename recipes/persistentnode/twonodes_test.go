package persistentnode_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// Two Nodes at one path on one client (one session): the second finds the first's node,
// which is not its own. It must not report it created, and its Close must not delete it;
// the first keeps its node (the same one: its czxid unchanged, never made again).
func TestTwoNodesOnePathOneClient(t *testing.T) {
	for _, mode := range []framework.CreateMode{framework.Ephemeral, framework.Persistent} {
		t.Run(map[framework.CreateMode]string{framework.Ephemeral: "ephemeral", framework.Persistent: "persistent"}[mode], func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			c := testutil.ConnectFailFast(t, srv.ConnectString())
			other := testutil.ConnectFailFast(t, srv.ConnectString())
			ctx := testutil.Context(t, 60*time.Second)
			first, firstCreated := start(t, c, "/pn/two/node", []byte("first"), persistentnode.WithMode(mode))
			waitCreated(t, firstCreated, 10*time.Second)
			st, err := other.Exists(ctx, "/pn/two/node")
			require.NoError(t, err)
			require.NotNil(t, st)

			second, err := persistentnode.New(c, "/pn/two/node", []byte("second"), persistentnode.WithMode(mode))
			require.NoError(t, err)
			var mu sync.Mutex
			var heard []persistentnode.Created
			second.AddListener(func(ev persistentnode.Created) { mu.Lock(); heard = append(heard, ev); mu.Unlock() })
			require.NoError(t, second.Start())
			require.NoError(t, second.WaitForInitialCreate(ctx))
			require.NoError(t, second.Close())
			mu.Lock()
			assert.Empty(t, heard, "the second Node reported the first's node as created by it")
			mu.Unlock()

			now, err := other.Exists(ctx, "/pn/two/node")
			require.NoError(t, err)
			require.NotNil(t, now, "the second Node's Close deleted the first's node")
			assert.Equal(t, st.Czxid, now.Czxid, "the first's node was deleted and made again")
			require.NoError(t, first.Close())
			testutil.RequireNoChildren(t, srv.ConnectString(), "/pn/two")
		})
	}
}
