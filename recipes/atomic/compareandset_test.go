package atomic_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/zktest"
)

// A counter node with no data counts as 0 (the package doc; Get says 0): CompareAndSet
// compares what the node holds as Get reads it, not its bytes, so CompareAndSet(0, 7)
// succeeds on it, and CompareAndSet(1, 7) does not.
func TestCompareAndSetOnEmptyNodeCountsAsZero(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	for _, tc := range []struct {
		path string
		want []byte // the bytes CompareAndSet(0, 7) leaves: 8 for a Long, 4 for an Int
	}{
		{path: "/counters/empty-long", want: []byte{0, 0, 0, 0, 0, 0, 0, 7}},
		{path: "/counters/empty-int", want: []byte{0, 0, 0, 7}},
	} {
		_, err := c.Create(ctx, tc.path, nil, framework.WithParents())
		require.NoError(t, err)
		var (
			cas func(expected, n int64) (bool, int64, int64, error)
			get func() (int64, error)
		)
		if len(tc.want) == 8 {
			l, err := atomic.NewLong(c, tc.path)
			require.NoError(t, err)
			cas = func(expected, n int64) (bool, int64, int64, error) {
				r, err := l.CompareAndSet(ctx, expected, n)
				return r.Succeeded, r.Pre, r.Post, err
			}
			get = func() (int64, error) { r, err := l.Get(ctx); return r.Post, err }
		} else {
			i, err := atomic.NewInt(c, tc.path)
			require.NoError(t, err)
			cas = func(expected, n int64) (bool, int64, int64, error) {
				r, err := i.CompareAndSet(ctx, int32(expected), int32(n))
				return r.Succeeded, int64(r.Pre), int64(r.Post), err
			}
			get = func() (int64, error) { r, err := i.Get(ctx); return int64(r.Post), err }
		}
		n, err := get()
		require.NoError(t, err)
		require.Equal(t, int64(0), n, "%s: Get reads no data as 0", tc.path)

		ok, _, _, err := cas(1, 7)
		require.NoError(t, err)
		assert.False(t, ok, "%s: CompareAndSet(1, 7) on a counter at 0", tc.path)

		ok, pre, post, err := cas(0, 7)
		require.NoError(t, err)
		require.True(t, ok, "%s: CompareAndSet(0, 7) failed on a node with no data, which Get reads as 0", tc.path)
		assert.Equal(t, [2]int64{0, 7}, [2]int64{pre, post}, tc.path)
		data, _, err := c.GetData(ctx, tc.path)
		require.NoError(t, err)
		assert.Equal(t, tc.want, data, tc.path)
	}
}
