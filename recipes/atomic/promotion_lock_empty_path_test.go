package atomic_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/atomic"
)

// NewLong, NewInt and NewValue "check their arguments": a promotion lock path that is not
// a path ("bad") is refused, and so is one at or below the counter. An empty lock path is
// not a path either, yet WithPromotedToLock("", ...) is taken silently for "no promotion":
// the caller asked for its changes to be promoted to a lock and gets none, with nothing
// said.
func TestPromotedToLockEmptyPathIsRefused(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	defer c.Close()
	_, err = atomic.NewLong(c, "/n", atomic.WithPromotedToLock("", nil, 0))
	assert.ErrorIs(t, err, framework.ErrInvalidArgument, "NewLong with an empty promotion lock path")
	_, err = atomic.NewValue(c, "/n", atomic.WithPromotedToLock("", nil, 0))
	assert.ErrorIs(t, err, framework.ErrInvalidArgument, "NewValue with an empty promotion lock path")
}
