package persistentnode_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// A node whose re-creation is refused for good (WithoutParents, and someone deleted the
// parent) waits; it does not try again in a loop. The window below only measures: a
// loaded machine sends fewer requests, never more, so it cannot fail a correct Node.
func TestRefusedRecreateDoesNotSpin(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	_, err := other.Create(ctx, "/p", nil)
	require.NoError(t, err)
	n, err := persistentnode.New(c, "/p/node", []byte("x"), persistentnode.WithoutParents())
	require.NoError(t, err)
	require.NoError(t, n.Start())
	t.Cleanup(func() { _ = n.Close() })
	require.NoError(t, n.WaitForInitialCreate(ctx))
	// The Node makes its node again as soon as it is deleted, while /p is still there:
	// the delete of /p can meet it (NotEmpty, CI run 37), and is then sent again.
	require.Eventually(t, func() bool {
		err := other.Delete(ctx, "/p", framework.WithChildren())
		if err != nil && !errors.Is(err, framework.ErrNotEmpty) {
			require.NoError(t, err)
		}
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "/p deleted")
	require.Eventually(t, func() bool { return c.Requests() > 3 }, 30*time.Second, 10*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // the Node's reaction to the deletion
	before := c.Requests()
	time.Sleep(2 * time.Second) // a window to count requests in, not a synchronisation
	sent := c.Requests() - before
	require.Less(t, sent, uint64(20), "%d requests in 2 s with nothing it can do", sent)
}
