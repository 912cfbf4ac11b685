package persistentnode_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestCloseFromListenerMakesNoLaterNode: a listener closes the Node at its first
// creation; once Close (from outside) has waited for the loop, the node is gone and stays
// gone: the loop took no further step, which would have created it again. Before the
// loop checked its stop channel itself, only its context's cancellation (by another
// goroutine, a moment after Close) kept it from that step; Close's own delete, a round
// trip, gave that goroutine the time to run, so this passed then too (it is repeated to
// give such an ordering a chance to show).
func TestCloseFromListenerMakesNoLaterNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	for i := range 30 {
		path := fmt.Sprintf("/pn/closing/n%d", i)
		n, err := persistentnode.New(c, path, []byte("x"), persistentnode.WithMode(framework.Persistent))
		require.NoError(t, err)
		closed := make(chan error, 1)
		n.AddListener(func(persistentnode.Created) { closed <- n.Close() })
		require.NoError(t, n.Start())
		require.NoError(t, testutil.Result(t, closed, 20*time.Second, "Close from the listener"))
		require.NoError(t, n.Close()) // waits for the loop
		st, err := other.Exists(ctx, path)
		require.NoError(t, err)
		require.Nil(t, st, "round %d: the node was created again after Close", i)
	}
}
