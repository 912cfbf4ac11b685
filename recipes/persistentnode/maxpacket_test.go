package persistentnode_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
)

// TestDataSizeFollowsClientMaxPacketSize: New and SetData check the data against the
// client's own packet limit (WithMaxPacketSize), not ZooKeeper's default one.
func TestDataSizeFollowsClientMaxPacketSize(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1", framework.WithMaxPacketSize(4096))
	require.NoError(t, err)
	defer c.Close()
	_, err = persistentnode.New(c, "/n", make([]byte, 8192))
	assert.ErrorIs(t, err, framework.ErrDataTooLarge, "8 KiB of data with a 4 KiB packet limit")
	_, err = persistentnode.NewTTL(c, "/t", time.Second, make([]byte, 8192))
	assert.ErrorIs(t, err, framework.ErrDataTooLarge)
	n, err := persistentnode.New(c, "/n", []byte("small"))
	require.NoError(t, err)
	assert.ErrorIs(t, n.SetData(context.Background(), make([]byte, 8192)), framework.ErrDataTooLarge)
	assert.Equal(t, "small", string(n.Data()), "refused data are not kept")
}
