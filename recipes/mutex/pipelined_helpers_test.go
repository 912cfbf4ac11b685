package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
)

// warmPipe makes m's next acquisition take the listing's children watch (the hint: the
// last listing showed nobody else), and waits until the warm cycle's watches are told.
func warmPipe(t *testing.T, c *framework.Client, m *mutex.Mutex) {
	t.Helper()
	ctx := testutil.Context(t, 30*time.Second)
	for range 2 {
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		require.Eventually(t, func() bool { return c.Watches() == 0 }, 10*time.Second, time.Millisecond)
	}
}
