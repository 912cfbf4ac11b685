package framework_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
)

// TestCheckDataSize: the check follows the client's packet limit, counts the path, and
// returns a DataTooLargeError that matches ErrDataTooLarge. No server is needed.
func TestCheckDataSize(t *testing.T) {
	for _, limit := range []int{4096, framework.DefaultMaxPacketSize} {
		c, err := framework.New("127.0.0.1:1", framework.WithMaxPacketSize(limit))
		require.NoError(t, err)
		assert.NoError(t, c.CheckDataSize("/a", 0))
		assert.NoError(t, c.CheckDataSize("/a", limit/2))
		err = c.CheckDataSize("/a", limit)
		require.ErrorIs(t, err, framework.ErrDataTooLarge)
		var tl *framework.DataTooLargeError
		require.True(t, errors.As(err, &tl))
		assert.Equal(t, limit, tl.Size)
		assert.Positive(t, tl.Limit)
		assert.NoError(t, c.CheckDataSize("/a", tl.Limit), "the limit it reports fits")
		assert.ErrorIs(t, c.CheckDataSize("/a", tl.Limit+1), framework.ErrDataTooLarge)
		assert.ErrorIs(t, c.CheckDataSize("/a/longer/path", tl.Limit), framework.ErrDataTooLarge, "the path counts")
		require.NoError(t, c.Close())
	}
}
