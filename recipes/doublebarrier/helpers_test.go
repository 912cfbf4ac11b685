package doublebarrier_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// memberRE is the name of a member node, Go's or Curator's: a bare UUID.
var memberRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func newMember(t testing.TB, c *framework.Client, path string, qty int) *doublebarrier.DoubleBarrier {
	t.Helper()
	d, err := doublebarrier.New(c, path, qty)
	require.NoError(t, err)
	return d
}

// waitChildren waits until path has n children (ready included).
func waitChildren(t testing.TB, connect, path string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		kids, err := zktest.Children(ctx, connect, path)
		return err == nil && len(kids) == n
	}, 20*time.Second, 20*time.Millisecond, "waiting for %d children of %s", n, path)
}

// assertNoMembers waits for the clients' guaranteed deletes, then checks that no member
// node is left under path (ready is allowed only if allowReady).
func assertNoMembers(t testing.TB, connect, path string, clients ...*framework.Client) {
	t.Helper()
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := c.WaitGuaranteedDeletes(ctx)
		cancel()
		if err != nil && !assert.ErrorIs(t, err, framework.ErrClosed) {
			return
		}
	}
	var kids []string
	if !assert.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		k, err := zktest.Children(ctx, connect, path)
		kids = k
		return err == nil && len(k) == 0
	}, 10*time.Second, 50*time.Millisecond) {
		t.Errorf("nodes left under %s: %v", path, kids)
	}
}
