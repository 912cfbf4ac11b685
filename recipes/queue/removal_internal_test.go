package queue

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
)

// The removal of a handled item deletes its node and our lock node at the versions read;
// a version read as -1 (wrapped) is refused, never sent as "any version", which would
// delete whatever node is at the path. A real node reaches -1 only after 2^32-1 writes:
// the test gives bindRemoval, where the versions are chosen, the Stats such a read returns.
func TestBindRemovalRefusesWrappedVersion(t *testing.T) {
	for _, tc := range []struct {
		item, lock int32
		wrapped    bool
	}{
		{0, 0, false},
		{3, 0, false},
		{math.MinInt32, math.MaxInt32, false},
		{-2, 0, false},
		{-1, 0, true},
		{0, -1, true},
	} {
		ops := []framework.Op{framework.DeleteOp("/q/item", 7), framework.DeleteOp("/q/lock", 7)}
		err := bindRemoval(ops, "/q/item", "/q/lock", &framework.Stat{Version: tc.item}, &framework.Stat{Version: tc.lock})
		if tc.wrapped {
			require.ErrorIs(t, err, framework.ErrWrappedVersion, "item %d, lock %d", tc.item, tc.lock)
			assert.Equal(t, []framework.Op{framework.DeleteOp("/q/item", 7), framework.DeleteOp("/q/lock", 7)}, ops, "ops changed")
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, []framework.Op{framework.DeleteOp("/q/item", tc.item), framework.DeleteOp("/q/lock", tc.lock)}, ops)
	}
}
